import ArgumentParser

@main
struct Bench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "peoplekeeper-bench",
        abstract: "PeopleKeeper's benchmarks.",
        subcommands: [CoreBenchmark.self, HistoryBenchmark.self, RelayCommand.self, LoadCommand.self, StoreBenchmark.self]
    )
}
