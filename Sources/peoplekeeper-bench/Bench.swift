import ArgumentParser

@main
struct Bench: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "peoplekeeper-bench",
        abstract: "PeopleKeeper's benchmarks.",
        subcommands: [CoreBenchmark.self]
    )
}
