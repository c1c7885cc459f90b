// The fuzz target of issue 7 over PeopleCore (see PeopleFuzzing.FuzzHarness).
//
// Built with `-sanitize=fuzzer -DPK_FUZZ` (scripts/fuzz.sh) it is a libFuzzer binary: `main` hands
// the command line to libFuzzer's driver, which calls `LLVMFuzzerTestOneInput` with each input, and
// `PK_FUZZ_MODE` (decode, apply or sync) says which target the run feeds. Built normally it replays files:
// `peoplekeeper-fuzz MODE FILE_OR_DIRECTORY...`.
//
// Why `main` calls the driver instead of leaving `main` to libFuzzer: SwiftPM links an executable
// with `main` defined as the module's own entry point (`peoplekeeper_fuzz_main`), so a target without
// `@main` does not link; libFuzzer's `LLVMFuzzerRunDriver` is its documented way to keep your own.
// Pointers appear here only at the C boundaries (libFuzzer's, the directory listing), never in the harness.
import PeopleFuzzing

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

#if PK_FUZZ

/// The target this process feeds, from `PK_FUZZ_MODE`, read once.
let fuzzMode: FuzzMode = {
    guard let name = getenv("PK_FUZZ_MODE").map({ String(cString: $0) }), let mode = FuzzMode(rawValue: name) else {
        fatalError("set PK_FUZZ_MODE to one of: \(FuzzMode.allCases.map(\.rawValue).joined(separator: ", "))")
    }
    return mode
}()

/// libFuzzer's entry point: one input, any violated invariant a crash with its message.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzTestOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = size > 0 && data != nil ? Array(UnsafeBufferPointer(start: data, count: size)) : []
    do { try FuzzHarness.run(fuzzMode, bytes) } catch { fatalError("\(error)") }
    return 0
}

/// `int LLVMFuzzerRunDriver(int *argc, char ***argv, int (*cb)(const uint8_t *, size_t))`, from
/// libFuzzer (linked by `-sanitize=fuzzer`).
@_silgen_name("LLVMFuzzerRunDriver")
func runFuzzerDriver(
    _ argc: UnsafeMutablePointer<CInt>,
    _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>>,
    _ callback: @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt
) -> CInt

@main
struct FuzzMain {
    static func main() {
        _ = fuzzMode  // refuse to start without a mode
        var argc = CommandLine.argc
        var argv = CommandLine.unsafeArgv
        exit(runFuzzerDriver(&argc, &argv, fuzzTestOneInput))
    }
}

#else

/// Replays inputs without the fuzzer: every file named, and every file in every directory named.
@main
struct FuzzMain {
    static func main() {
        let arguments = Array(CommandLine.arguments.dropFirst())
        guard let first = arguments.first, let mode = FuzzMode(rawValue: first), arguments.count > 1 else {
            print("usage: peoplekeeper-fuzz decode|apply|sync FILE_OR_DIRECTORY...")
            exit(64)
        }
        var count = 0
        var failed = 0
        for path in arguments.dropFirst() {
            for file in FuzzInputs.files(at: path) {
                guard let bytes = FuzzInputs.read(file) else {
                    print("\(file): cannot read")
                    exit(66)
                }
                count += 1
                do { try FuzzHarness.run(mode, bytes) } catch {
                    failed += 1
                    print("\(file): \(error)")
                }
            }
        }
        print("\(mode.rawValue): \(count) inputs replayed, \(failed) broke an invariant")
        exit(failed == 0 ? 0 : 1)
    }
}

#endif
