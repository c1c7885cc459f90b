import Foundation
import Testing

@testable import PeopleHub

@Suite("Process memory")
struct ProcessMemoryTests {
    /// A cgroup tree under a fresh directory (`files`: paths below it and their contents: its
    /// `proc-cgroup` stands for /proc/self/cgroup, `fs/` for /sys/fs/cgroup), handed to `body` with a
    /// reading of the limit it gives; removed after.
    private func inTree(_ files: [String: String], _ body: (_ root: String, _ limit: () -> Int?) throws -> Void) throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("pk-cgroup-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: root) }
        for (path, text) in files {
            let url = URL(fileURLWithPath: root + "/" + path)
            try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
            try text.write(to: url, atomically: true, encoding: .utf8)
        }
        try body(root) { ProcessMemory.containerLimitBytes(cgroupFile: root + "/proc-cgroup", root: root + "/fs") }
    }

    @Test("cgroup v2: the smallest memory.max from the process's cgroup up; `max` is no limit")
    func cgroupV2() throws {
        try inTree([
            "proc-cgroup": "0::/system.slice/pk.service\n",
            "fs/system.slice/pk.service/memory.max": "max\n",
            "fs/system.slice/memory.max": "536870912\n",
        ]) { root, limit in
            #expect(limit() == 536_870_912)
            try "max\n".write(toFile: root + "/fs/system.slice/memory.max", atomically: true, encoding: .utf8)
            #expect(limit() == nil)
        }
    }

    @Test("in a container the host's cgroup path is not mounted: the mount's root stands for it")
    func containerNamespace() throws {
        try inTree([
            "proc-cgroup": "0::/kubepods/burstable/pod1/abc\n",
            "fs/memory.max": "268435456\n",
        ]) { _, limit in
            #expect(limit() == 268_435_456)
        }
    }

    @Test("cgroup v1: memory.limit_in_bytes under the memory controller; a page-rounded 2^63 is no limit")
    func cgroupV1() throws {
        try inTree([
            "proc-cgroup": "12:pids:/docker/abc\n4:memory:/docker/abc\n1:name=systemd:/docker/abc\n",
            "fs/memory/docker/abc/memory.limit_in_bytes": "134217728\n",
            "fs/memory/memory.limit_in_bytes": "9223372036854771712\n",
        ]) { root, limit in
            #expect(limit() == 134_217_728)
            try FileManager.default.removeItem(atPath: root + "/fs/memory/docker/abc/memory.limit_in_bytes")
            #expect(limit() == nil)
        }
    }

    @Test("the heap in use rises with what the process allocates and falls when it is freed")
    func heapInUse() throws {
        // The heap is the whole process's: the suites running beside this one allocate and free too (a
        // fresh-clone run saw 57 MiB for these 64). One of five tries must see it within 4 MiB.
        var seen: [(Int, Int, Int)] = []
        for _ in 0..<5 {
            let before = try #require(ProcessMemory.heapInUse())
            let block = UnsafeMutableRawPointer.allocate(byteCount: 64 << 20, alignment: 16)
            block.initializeMemory(as: UInt8.self, repeating: 1, count: 64 << 20)
            let during = try #require(ProcessMemory.heapInUse())
            block.deallocate()
            let after = try #require(ProcessMemory.heapInUse())
            seen.append((before, during, after))
            if during - before >= 60 << 20, during - after >= 60 << 20 { break }
        }
        #expect(seen.contains { $0.1 - $0.0 >= 60 << 20 && $0.1 - $0.2 >= 60 << 20 }, "before → during → after: \(seen)")
        #expect(ProcessMemory.residentBytes().map { $0 > 0 } == true)
    }
}
