import Foundation
import PeopleCore

/// The room as a fresh client sees it after the run.
final class RoomCheck: @unchecked Sendable {
    var models: [PeopleModel]
    var revisions: [Int]
    private let lock = NSLock()
    private var _done = 0

    init(count: Int) {
        models = Array(repeating: PeopleModel(), count: count)
        revisions = Array(repeating: -1, count: count)
    }

    var done: Int { lock.withLock { _done } }
    func finish() { lock.withLock { _done += 1 } }
}
