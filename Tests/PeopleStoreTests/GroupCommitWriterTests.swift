import Foundation
import PeopleCore
@testable import PeopleStore
import Synchronization
import Testing

@Suite("The group-commit writer")
struct GroupCommitWriterTests {
    /// What each commit was handed: per batch, the kind of each piece of work and its room.
    final class Commits: Sendable {
        let batches = Mutex<[[String]]>([])
        func record(_ batch: [WriterWork]) {
            batches.withLock {
                $0.append(batch.map { work in
                    switch work {
                    case .append(let room, let entries, _): "append \(room) \(entries.count)"
                    case .snapshot(let room, _, _): "snapshot \(room)"
                    case .checkpoints(let room, let kept): "checkpoints \(room) \(kept.count)"
                    case .clear(let room): "clear \(room)"
                    case .delete(let room, _, _, _): "delete \(room)"
                    case .probe: "probe"
                    }
                })
            }
        }
    }

    @Test("work handed over together is never split between transactions, whatever maxBatch is")
    func togetherIsOneTransaction() throws {
        let commits = Commits()
        let gate = DispatchSemaphore(value: 0)
        let writer = GroupCommitWriter(name: "test-writer", kind: "test", maxBatch: 2, commit: { batch in
            commits.record(batch)
            if batch.first?.room == "first" { gate.wait() }  // keeps the writer busy while the rest queue
        }, onSnapshotFailure: { _, _ in })
        let done = DispatchSemaphore(value: 0)
        let entry = JournalEntry(position: 1, record: .forgotten(session: "nobody"))
        writer.submit(.append(room: "first", entries: [entry], whenDurable: { _ in done.signal() }))
        while commits.batches.withLock({ $0.isEmpty }) { Thread.sleep(forTimeInterval: 0.001) }
        // Queued while the first commit runs: one piece of work, then a room created with its history.
        writer.submit(.append(room: "other", entries: [entry], whenDurable: { _ in done.signal() }))
        writer.submit(together: [.snapshot(room: "new", Room(name: "new").snapshot(), notices: []),
                                 .append(room: "new", entries: [entry, entry], whenDurable: { _ in done.signal() })])
        gate.signal()
        for _ in 0..<3 { #expect(done.wait(timeout: .now() + 10) == .success) }
        writer.close()
        // Two pieces fit maxBatch, but not three: the group goes whole into the next transaction
        // (before, the snapshot went with `other` and the history into a transaction of its own).
        #expect(commits.batches.withLock { $0 } == [["append first 1"], ["append other 1"],
                                                      ["snapshot new", "append new 2"]])
    }

    static func entries(_ count: Int) -> [JournalEntry] {
        (1...count).map { JournalEntry(position: $0, record: .forgotten(session: "s\($0)")) }
    }

    @Test("a long creation goes a chunk per transaction, other rooms' work between them, the room's own after the last")
    func chunkedCreation() throws {
        let commits = Commits()
        let gate = DispatchSemaphore(value: 0)
        let writer = GroupCommitWriter(name: "test-writer", kind: "test", commit: { batch in
            commits.record(batch)
            if case .clear? = batch.first { gate.wait() }  // the first chunk: the test queues more meanwhile
        }, onSnapshotFailure: { _, _ in })
        let outcomes = Mutex<[String]>([])
        let done = DispatchSemaphore(value: 0)
        func note(_ what: String) -> @Sendable (StoreError?) -> Void {
            { error in
                outcomes.withLock { $0.append(error == nil ? what : "\(what) failed") }
                done.signal()
            }
        }
        writer.create(room: "big", Room(name: "big").snapshot(), notices: [], entries: Self.entries(5), checkpoints: [],
                      chunk: 2, whenDurable: note("created"))
        while commits.batches.withLock({ $0.isEmpty }) { Thread.sleep(forTimeInterval: 0.001) }
        writer.submit(.append(room: "other", entries: Self.entries(1), whenDurable: note("other")))
        let later = JournalEntry(position: 6, record: .forgotten(session: "later"))
        writer.submit(.append(room: "big", entries: [later], whenDurable: note("big later")))
        gate.signal()
        for _ in 0..<3 { #expect(done.wait(timeout: .now() + 10) == .success) }
        writer.close()
        #expect(commits.batches.withLock { $0 } == [
            ["clear big", "append big 2"],
            ["append other 1", "append big 2"],  // another room's commit before the rest of the creation
            ["snapshot big", "checkpoints big 0", "append big 1", "append big 1"],  // the room exists; then its own
        ])
        #expect(outcomes.withLock { $0 } == ["other", "created", "big later"])
    }

    @Test("a chunk that fails fails the creation: no snapshot is written, and the room's later appends are refused")
    func chunkedCreationFails() throws {
        let commits = Commits()
        let writer = GroupCommitWriter(name: "test-writer", kind: "test", commit: { batch in
            commits.record(batch)
            if batch.count == 1, case .append("big", let entries, _) = batch[0], entries.first?.position == 3 {
                throw StoreError(.conflict, "the second chunk collides")
            }
        }, onSnapshotFailure: { _, _ in })
        let failure = Mutex<StoreError?>(nil)
        let done = DispatchSemaphore(value: 0)
        writer.create(room: "big", Room(name: "big").snapshot(), notices: [], entries: Self.entries(5), checkpoints: [],
                      chunk: 2) { error in
            failure.withLock { $0 = error }
            done.signal()
        }
        #expect(done.wait(timeout: .now() + 10) == .success)
        #expect(failure.withLock { $0 }?.kind == .conflict)
        let refused = Mutex<StoreError?>(nil)
        writer.submit(.append(room: "big", entries: Self.entries(1)) { error in
            refused.withLock { $0 = error }
            done.signal()
        })
        #expect(done.wait(timeout: .now() + 10) == .success)
        #expect(refused.withLock { $0 }?.kind == .conflict)
        writer.close()
        #expect(commits.batches.withLock { $0 } == [["clear big", "append big 2"], ["append big 2"]])
    }

    @Test("a group bigger than maxBatch is still one transaction")
    func bigGroup() throws {
        let commits = Commits()
        let writer = GroupCommitWriter(name: "test-writer", kind: "test", maxBatch: 1, commit: { commits.record($0) },
                                       onSnapshotFailure: { _, _ in })
        let done = DispatchSemaphore(value: 0)
        let entry = JournalEntry(position: 1, record: .forgotten(session: "nobody"))
        writer.submit(together: [.snapshot(room: "big", Room(name: "big").snapshot(), notices: []),
                                 .append(room: "big", entries: [entry], whenDurable: { _ in done.signal() })])
        #expect(done.wait(timeout: .now() + 10) == .success)
        writer.close()
        #expect(commits.batches.withLock { $0 } == [["snapshot big", "append big 1"]])
    }
}
