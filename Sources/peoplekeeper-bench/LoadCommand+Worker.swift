import Foundation
import WebSocketTransport

extension LoadCommand {
    /// A worker process: its receivers joined; tell the reporting process, wait for the rooms' heads,
    /// wait until every receiver has them, and leave what they saw for it.
    func runWorker(_ run: LoadRun, client: WebSocketClient, directory: String) async throws {
        let folder = URL(fileURLWithPath: directory)
        try Data().write(to: folder.appendingPathComponent("ready-\(workerIndex)"))
        let headsFile = folder.appendingPathComponent("heads.json")
        while !FileManager.default.fileExists(atPath: headsFile.path) {
            try await Task.sleep(nanoseconds: 2_000_000)
        }
        let heads = try JSONDecoder().decode([Int].self, from: Data(contentsOf: headsFile))
        client.perform { for (room, head) in heads.enumerated() { run.saw(room: room, rev: head) } }
        try await run.wait(timeout: 60, "every client has every revision") { run in
            client.perform { run.checkHeads() }
            return run.allAtHead
        }
        let result = await withCheckedContinuation { (done: CheckedContinuation<LoadWorkers.Result, Never>) in
            client.perform { done.resume(returning: run.workerResult()) }
        }
        await client.shutdown()
        try result.write(to: folder, index: workerIndex)
    }
}
