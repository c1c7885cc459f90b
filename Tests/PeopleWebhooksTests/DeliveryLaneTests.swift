import PeopleCore
import PeopleStore
@testable import PeopleWebhooks
import Testing

/// The lane's decisions alone: no socket, no store, no clock.
@Suite("Delivery lane (pure)")
struct DeliveryLaneTests {
    func revision(_ number: Int) -> Revision {
        Revision(number: number, author: "ann", kind: .edit, label: nil, applied: [], timestamp: Int64(number) * 1_000)
    }

    @Test("a room first seen through a revision starts just before it, reads the store, writes the cursor after each delivery")
    func firstSeenThroughARevision() {
        var lane = DeliveryLane()
        lane.revisionDurable(7)
        guard case .loadCursor = lane.next(endpointFailing: false, chunk: 10) else { Issue.record("expected loadCursor"); return }
        lane.loaded(nil)
        guard case .writeCursor(6, _) = lane.next(endpointFailing: false, chunk: 10) else { Issue.record("expected the start written"); return }
        lane.wrote(6)
        guard case .read(after: 6, through: 7, let generation) = lane.next(endpointFailing: false, chunk: 10) else {
            Issue.record("expected a read of 7"); return
        }
        #expect(lane.read([revision(7)], after: 6, through: 7, generation: generation).isEmpty)
        guard case .post(.revision(let posted), generation) = lane.next(endpointFailing: false, chunk: 10) else {
            Issue.record("expected revision 7 posted"); return
        }
        #expect(posted.number == 7)
        lane.delivered(.revision(posted), generation: generation)
        guard case .writeCursor(7, _) = lane.next(endpointFailing: false, chunk: 10) else { Issue.record("expected cursor 7"); return }
        lane.wrote(7)
        guard case .stop = lane.next(endpointFailing: false, chunk: 10) else { Issue.record("expected stop"); return }
        #expect(lane.backlog == 0 && !lane.running)
    }

    @Test("notices the store kept come first, oldest first; each delivered one is removed from the store before the next step; a room created again since its deletion, without a cursor, starts at revision 1")
    func keptNotices() {
        var lane = DeliveryLane()
        let deleted = RoomNotice(event: .roomDeleted, time: 2_000), again = RoomNotice(event: .roomCreated, time: 3_000)
        lane.restored([again, deleted])
        lane.restored([again])                         // told twice (a live call and the store): kept once
        lane.resume(head: 2, stored: nil)
        #expect(lane.backlog == 4)
        func step() -> DeliveryLane.Step { lane.next(endpointFailing: false, chunk: 10) }
        guard case .post(.notice(deleted), let generation) = step() else { Issue.record("expected room.deleted first"); return }
        lane.delivered(.notice(deleted), generation: generation)
        guard case .forgetNotice(deleted) = step() else { Issue.record("expected its record removed"); return }
        lane.forgot(deleted)
        guard case .post(.notice(again), _) = step() else { Issue.record("expected room.created next"); return }
        lane.delivered(.notice(again), generation: generation)
        guard case .forgetNotice(again) = step() else { Issue.record("expected its record removed"); return }
        lane.forgot(again)
        guard case .writeCursor(0, _) = step() else { Issue.record("expected the start at 0 written"); return }
        lane.wrote(0)
        guard case .read(after: 0, through: 2, _) = step() else { Issue.record("expected revisions from the first"); return }
    }

    @Test("from a code review: a room made while its endpoint fails still gets its cursor at 0 (a deletion then knows what is owed); a delivered event is the one sent, though an older one came in front")
    func resetWhileFailingAndTheEventSent() {
        var lane = DeliveryLane()
        let created = RoomNotice(event: .roomCreated, time: 1_000)
        lane.created(created)
        guard case .resetCursor(.zero, _) = lane.next(endpointFailing: true, chunk: 10) else {
            Issue.record("expected the cursor reset even while failing"); return
        }
        lane.didReset(.zero)
        guard case .stop = lane.next(endpointFailing: true, chunk: 10) else { Issue.record("expected nothing posted while failing"); return }

        var other = DeliveryLane()
        let deleted = RoomNotice(event: .roomDeleted, time: 2_000), kept = RoomNotice(event: .roomCreated, time: 500)
        other.deleted(deleted)
        guard case .resetCursor(.forget, _) = other.next(endpointFailing: false, chunk: 10) else { Issue.record("expected forget"); return }
        other.didReset(.forget)
        guard case .post(.notice(deleted), let generation) = other.next(endpointFailing: false, chunk: 10) else {
            Issue.record("expected room.deleted posted"); return
        }
        other.restored([kept])                        // the store's older event, found while room.deleted was out
        other.delivered(.notice(deleted), generation: generation)
        guard case .forgetNotice(deleted) = other.next(endpointFailing: false, chunk: 10) else {
            Issue.record("expected room.deleted forgotten, not the older event"); return
        }
        other.forgot(deleted)
        guard case .post(.notice(kept), _) = other.next(endpointFailing: false, chunk: 10) else {
            Issue.record("expected the older event still to be posted"); return
        }
    }

    @Test("from a code review: a lane with no cursor starts before the first of the revisions made durable together, and at the head when a load says nothing is new")
    func startsAtTheBatch() {
        var batch = DeliveryLane()
        batch.revisionDurable(8, after: 5)            // one commit of revisions 6, 7 and 8
        guard case .loadCursor = batch.next(endpointFailing: false, chunk: 10) else { Issue.record("expected loadCursor"); return }
        batch.loaded(nil)
        guard case .writeCursor(5, _) = batch.next(endpointFailing: false, chunk: 10) else { Issue.record("expected the start at 5"); return }
        var loaded = DeliveryLane()
        loaded.revisionDurable(8, after: 8)           // the room loaded at 8: nothing new
        guard case .loadCursor = loaded.next(endpointFailing: false, chunk: 10) else { Issue.record("expected loadCursor"); return }
        loaded.loaded(nil)
        guard case .writeCursor(8, _) = loaded.next(endpointFailing: false, chunk: 10) else { Issue.record("expected the start at the head"); return }
    }

    @Test("a deleted room's kept notices are delivered and removed, and nothing else: no cursor is written for it")
    func keptNoticesOfADeletedRoom() {
        var lane = DeliveryLane()
        let created = RoomNotice(event: .roomCreated, time: 1_000), deleted = RoomNotice(event: .roomDeleted, time: 2_000)
        lane.restored([created, deleted])
        var steps: [String] = []
        loop: while true {
            switch lane.next(endpointFailing: false, chunk: 10) {
            case .post(let item, let generation): steps.append("post"); lane.delivered(item, generation: generation)
            case .forgetNotice(let notice): steps.append("forget"); lane.forgot(notice)
            case .stop: break loop
            default: Issue.record("unexpected step"); return
            }
        }
        #expect(steps == ["post", "forget", "post", "forget"])
        #expect(lane.isEmpty)
    }

    @Test("every cursor write and reset names the room's life: its creation's time when made here, the stored cursor's when loaded, none once deleted")
    func cursorStepsNameTheLife() {
        var lane = DeliveryLane()
        func step() -> DeliveryLane.Step { lane.next(endpointFailing: false, chunk: 10) }
        lane.created(nil, at: 5_000)
        guard case .resetCursor(.zero, life: 5_000) = step() else { Issue.record("expected the reset of life 5000"); return }
        lane.didReset(.zero)
        lane.revisionDurable(1)
        guard case .read(after: 0, through: 1, let generation) = step() else { Issue.record("expected a read of 1"); return }
        #expect(lane.read([revision(1)], after: 0, through: 1, generation: generation).isEmpty)
        guard case .post(let item, generation) = step() else { Issue.record("expected revision 1 posted"); return }
        lane.delivered(item, generation: generation)
        guard case .writeCursor(1, life: 5_000) = step() else { Issue.record("expected cursor 1 of life 5000"); return }
        // The write is on its way; the room is deleted and made again.
        lane.deleted(nil, owed: true, at: 6_000)
        guard case .resetCursor(.forget, life: nil) = step() else { Issue.record("expected the forget"); return }
        lane.created(nil, at: 7_000)
        lane.wrote(1)
        guard case .resetCursor(.zero, life: 7_000) = step() else { Issue.record("expected the reset of life 7000"); return }

        var loaded = DeliveryLane()
        loaded.revisionDurable(3)
        guard case .loadCursor = loaded.next(endpointFailing: false, chunk: 10) else { Issue.record("expected loadCursor"); return }
        loaded.loaded(WebhookCursor(rev: 2, life: 9_000))
        guard case .read(after: 2, through: 3, let second) = loaded.next(endpointFailing: false, chunk: 10) else {
            Issue.record("expected a read of 3"); return
        }
        #expect(loaded.read([revision(3)], after: 2, through: 3, generation: second).isEmpty)
        guard case .post(let posted, second) = loaded.next(endpointFailing: false, chunk: 10) else { Issue.record("expected 3 posted"); return }
        loaded.delivered(posted, generation: second)
        guard case .writeCursor(3, life: 9_000) = loaded.next(endpointFailing: false, chunk: 10) else {
            Issue.record("expected cursor 3 of life 9000"); return
        }
    }

    @Test("from a code review: a reset or a cursor write asked for before the room was deleted and made again changes nothing when it returns; the new life's reset still goes")
    func staleStoreStepsChangeNothing() {
        var lane = DeliveryLane()
        func step() -> DeliveryLane.Step { lane.next(endpointFailing: false, chunk: 10) }
        lane.created(nil, at: 5_000)
        guard case .resetCursor(.zero, life: 5_000) = step() else { Issue.record("expected the reset of life 5000"); return }
        // While it is on its way, the room is deleted and made again.
        lane.deleted(nil, at: 6_000)
        lane.created(nil, at: 7_000)
        lane.didReset(.zero)                           // the reset of life 5000 returns
        guard case .resetCursor(.zero, life: 7_000) = step() else {
            Issue.record("expected the reset of life 7000 still to go (the store has life 5000's)"); return
        }
        lane.didReset(.zero)
        lane.revisionDurable(1)
        guard case .read(after: 0, through: 1, let generation) = step() else { Issue.record("expected a read of 1"); return }
        #expect(lane.read([revision(1)], after: 0, through: 1, generation: generation).isEmpty)
        guard case .post(let item, generation) = step() else { Issue.record("expected 1 posted"); return }
        lane.delivered(item, generation: generation)
        guard case .writeCursor(1, life: 7_000) = step() else { Issue.record("expected cursor 1 written"); return }
        // The write is on its way; the room is deleted and made again; the write returns refused.
        lane.deleted(nil, at: 8_000)
        lane.created(nil, at: 9_000)
        lane.wrote(1, landed: false)
        #expect(!lane.cursorStale, "an earlier life's refused write says nothing of this life's cursor")
        guard case .resetCursor(.zero, life: 9_000) = step() else { Issue.record("expected the reset of life 9000"); return }
    }

    @Test("from a code review: a write the store refuses in the lane's own life (the room was made by another process: an import between the start's cursor read and its room listing) makes the lane read the cursor again and go on from the room's life")
    func refusedWriteReadsTheCursorAgain() {
        // The start read no cursor; the import committed the room with revisions 1...3 and its cursor at
        // 0 of life 4000 before the rooms were listed.
        var lane = DeliveryLane()
        func step() -> DeliveryLane.Step { lane.next(endpointFailing: false, chunk: 10) }
        lane.resume(head: 3, stored: nil)
        guard case .writeCursor(3, life: nil) = step() else { Issue.record("expected the start at the head written"); return }
        lane.wrote(3, landed: false)
        guard case .loadCursor = step() else { Issue.record("expected the cursor read again"); return }
        lane.loaded(WebhookCursor(rev: 0, life: 4_000))
        guard case .loadNotices = step() else { Issue.record("expected the kept room events read (the import's room.created)"); return }
        lane.noticesRead([])
        // Then what earlier lives owe the endpoint (none here): a life the lane did not hear of may
        // follow others it did not hear of either.
        guard case .loadOwed(after: nil, limit: 10) = step() else { Issue.record("expected the owed revisions read"); return }
        lane.owedLoaded([], after: nil, limit: 10)
        guard case .read(after: 0, through: 3, let generation) = step() else {
            Issue.record("expected revisions 1...3 read: the import's cursor is at 0"); return
        }
        #expect(lane.life == 4_000 && lane.unwritten == nil && lane.backlog == 3)
        #expect(lane.read([revision(1), revision(2), revision(3)], after: 0, through: 3, generation: generation).isEmpty)
        guard case .post(let item, generation) = step() else { Issue.record("expected 1 posted"); return }
        lane.delivered(item, generation: generation)
        guard case .writeCursor(1, life: 4_000) = step() else { Issue.record("expected cursor 1 of life 4000"); return }

        // A store cursor of an earlier life than the lane's (an older node's write): the lane's life is
        // put first (a reset), then its cursor written again.
        var ahead = DeliveryLane()
        func next() -> DeliveryLane.Step { ahead.next(endpointFailing: false, chunk: 10) }
        ahead.resume(head: 2, stored: WebhookCursor(rev: 1, life: 9_000))
        guard case .read(after: 1, through: 2, let second) = next() else { Issue.record("expected a read of 2"); return }
        #expect(ahead.read([revision(2)], after: 1, through: 2, generation: second).isEmpty)
        guard case .post(let posted, second) = next() else { Issue.record("expected 2 posted"); return }
        ahead.delivered(posted, generation: second)
        guard case .writeCursor(2, life: 9_000) = next() else { Issue.record("expected cursor 2 of life 9000"); return }
        ahead.wrote(2, landed: false)
        guard case .loadCursor = next() else { Issue.record("expected the cursor read again"); return }
        ahead.loaded(WebhookCursor(rev: 5, life: 8_000))
        guard case .resetCursor(.zero, life: 9_000) = next() else { Issue.record("expected life 9000 put"); return }
        ahead.didReset(.zero)
        guard case .writeCursor(2, life: 9_000) = next() else { Issue.record("expected cursor 2 written again"); return }
        ahead.wrote(2)
        guard case .stop = next() else { Issue.record("expected nothing left"); return }
        #expect(ahead.isIdle)
    }

    @Test("from a code review: a lane begun at the head by itself and deleted before a cursor write of its landed forgets none of the revisions up to there: the store kept them after the import's cursor")
    func deletedBeforeItsStartLanded() {
        var lane = DeliveryLane()
        func step() -> DeliveryLane.Step { lane.next(endpointFailing: false, chunk: 10) }
        // The import's race: the start read no cursor and listed the room at 3; the store's cursor is
        // the import's, at 0 of life 5000.
        lane.resume(head: 3, stored: nil)
        guard case .writeCursor(3, life: nil) = step() else { Issue.record("expected the start at the head written"); return }
        // The room is deleted before that write returns: the store kept 1...3 for the endpoint.
        lane.deleted(RoomNotice(event: .roomDeleted, time: 9_000), owed: true, at: 9_000)
        lane.wrote(3, landed: false)
        let kept = (1...3).map { owed($0, deletedAt: 9_000) }
        guard let (posted, forgotten) = drainDeletion(&lane, kept: kept, step: { $0.next(endpointFailing: false, chunk: 10) }) else { return }
        // Before: the lane's cursor (3) was taken as sent, and 1...3 removed from the store unsent.
        #expect(posted == ["1", "2", "3", "room.deleted"])
        #expect(forgotten.isEmpty)

        // A lane whose start write landed: the store's cursor is its own, and what it kept is after it.
        var written = DeliveryLane()
        written.resume(head: 3, stored: nil)
        guard case .writeCursor(3, life: nil) = written.next(endpointFailing: false, chunk: 10) else {
            Issue.record("expected the start written"); return
        }
        written.wrote(3)
        #expect(written.unconfirmedStart == nil)
        written.deleted(nil, owed: true, at: 9_000)
        #expect(written.sentBeforeDeletions[9_000] == SentSpan(after: 0, through: 3))
    }

    @Test("from a code review: a lane that takes a later life from a refused write drops the head it knew of its own (reading up to it would skip the new life's revisions for good) and reads what the lives between owe first")
    func laterLifeDropsTheOldHead() {
        // Cluster mode: the lane delivered life 1000 up to 10; another node deleted the room and made
        // it again (life 2000), now at revision 2, its cursor there at 0.
        var lane = DeliveryLane()
        func step() -> DeliveryLane.Step { lane.next(endpointFailing: false, chunk: 10) }
        lane.resume(head: 10, stored: WebhookCursor(rev: 10, life: 1_000))
        lane.revisionDurable(11)
        guard case .read(after: 10, through: 11, let old) = step() else { Issue.record("expected a read of 11"); return }
        #expect(lane.read([revision(11)], after: 10, through: 11, generation: old).isEmpty)
        guard case .post(let item, old) = step() else { Issue.record("expected 11 posted"); return }
        lane.delivered(item, generation: old)
        guard case .writeCursor(11, life: 1_000) = step() else { Issue.record("expected cursor 11 of life 1000"); return }
        lane.wrote(11, landed: false)
        guard case .loadCursor = step() else { Issue.record("expected the cursor read again"); return }
        lane.loaded(WebhookCursor(rev: 0, life: 2_000))
        #expect(lane.life == 2_000 && lane.cursor == 0 && lane.head == 0)
        guard case .loadNotices = step() else { Issue.record("expected the kept room events read"); return }
        let deleted = RoomNotice(event: .roomDeleted, time: 1_500), created = RoomNotice(event: .roomCreated, time: 2_000)
        lane.noticesRead([deleted, created])
        guard case .loadOwed(after: nil, limit: 10) = step() else {
            Issue.record("expected what life 1000 owes read before its room.deleted"); return
        }
        lane.owedLoaded([owed(12, deletedAt: 1_500)], after: nil, limit: 10)
        // Nothing else but those (a read of the new life's revisions, up to the old head, is unexpected).
        guard let (posted, forgotten) = drainDeletion(&lane, kept: [], step: { $0.next(endpointFailing: false, chunk: 10) })
        else { return }
        #expect(posted == ["12", "room.deleted", "room.created"])
        #expect(forgotten.isEmpty)
        // The new life's revisions, once its news comes: from the first.
        lane.revisionDurable(2)
        guard case .read(after: 0, through: 2, _) = step() else { Issue.record("expected a read of 1 and 2"); return }
    }

    @Test("a room deleted while revisions waited: the lane reads what the store kept for it a chunk at a time, before anything else, delivers it in order, then room.deleted, then the room made again")
    func deletionDeliversWhatWasOwed() {
        var lane = DeliveryLane()
        lane.resume(head: 2, stored: WebhookCursor(rev: 2, life: nil))
        lane.revisionDurable(5)
        func step() -> DeliveryLane.Step { lane.next(endpointFailing: false, chunk: 2) }
        guard case .read(after: 2, through: 4, let old) = step() else { Issue.record("expected a read of 3 and 4"); return }
        #expect(lane.backlog == 3)
        let deleted = RoomNotice(event: .roomDeleted, time: 2_000), created = RoomNotice(event: .roomCreated, time: 3_000)
        lane.deleted(deleted, owed: true)
        // Revisions 3 to 5 are still owed (the store keeps them), then room.deleted.
        #expect(lane.backlog == 4)
        lane.created(created, at: 3_000)
        #expect(lane.backlog == 5)
        // The read of the old life returns late: dropped.
        #expect(lane.read([revision(3), revision(4)], after: 2, through: 4, generation: old).isEmpty)
        guard case .resetCursor(.zero, _) = step() else { Issue.record("expected the new life's cursor reset"); return }
        lane.didReset(.zero)
        // What the store keeps for the endpoint: revisions 3 to 5 of the deleted room, read 2 at a time.
        let owed = [3, 4, 5].map { RoomNotice(event: .revision, time: 2_000, revision: revision($0)) }
        var posted: [String] = [], reads: [OwedPosition?] = [], backlogs: [Int] = []
        loop: while true {
            switch step() {
            case .loadOwed(let after, let limit):
                reads.append(after)
                let page = Array(owed.filter { after == nil || $0.owedPosition! > after! }.prefix(limit))
                lane.owedLoaded(page, after: after, limit: limit)
                lane.owedLoaded(page, after: after, limit: limit)    // told twice: kept once
                backlogs.append(lane.backlog)
            case .post(.notice(let notice), let generation):
                posted.append(notice.revision.map { "\($0.number)" } ?? notice.event.rawValue)
                lane.delivered(.notice(notice), generation: generation)
                backlogs.append(lane.backlog)
            case .forgetNotice(let notice): lane.forgot(notice)
            case .writeCursor(let rev, _): lane.wrote(rev)
            case .read, .stop: break loop
            default: Issue.record("unexpected step"); return
            }
        }
        #expect(posted == ["3", "4", "5", "room.deleted", "room.created"])
        // A read moves owed revisions from unread to read: only a delivery lowers the backlog.
        #expect(backlogs == [5, 4, 3, 3, 2, 1, 0])
        #expect(reads == [nil, OwedPosition(time: 2_000, rev: 4)])
        #expect(!lane.owedPending)
    }

    @Test("a room deleted just after deliveries whose cursor is not written yet: what the store kept of those is forgotten, not sent again")
    func deletionAfterUnwrittenDeliveries() {
        var lane = DeliveryLane()
        lane.resume(head: 0, stored: WebhookCursor(rev: 0, life: nil))
        lane.revisionDurable(4)
        // Cursors are written every 10 deliveries or minute here (the first at once): after 1 to 3
        // the stored one is 1.
        func step() -> DeliveryLane.Step { lane.next(endpointFailing: false, chunk: 10, cursorBatch: 10, cursorInterval: 60_000) }
        guard case .read(after: 0, through: 4, let generation) = step() else { Issue.record("expected a read"); return }
        #expect(lane.read((1...4).map(revision), after: 0, through: 4, generation: generation).isEmpty)
        var stored = 0, sent: [Int] = []
        while sent.count < 3 {
            switch step() {
            case .post(.revision(let posted), _):
                sent.append(posted.number)
                lane.delivered(.revision(posted), generation: generation)
            case .writeCursor(let rev, _):
                stored = rev
                lane.wrote(rev)
            default: Issue.record("unexpected step"); return
            }
        }
        #expect(sent == [1, 2, 3] && stored == 1 && lane.unwritten == 3)
        // Deleted before 4 went: the store kept 2 to 4 (after its cursor), the endpoint was sent 2 and 3.
        lane.deleted(RoomNotice(event: .roomDeleted, time: 2_000), owed: true, at: 2_000)
        #expect(lane.backlog == 2, "revision 4 and room.deleted")
        let kept = ((stored + 1)...4).map { RoomNotice(event: .revision, time: 2_000, revision: revision($0)) }
        guard let (posted, forgotten) = drainDeletion(&lane, kept: kept, step: {
            $0.next(endpointFailing: false, chunk: 10, cursorBatch: 10, cursorInterval: 60_000)
        }) else { return }
        #expect(posted == ["4", "room.deleted"])
        #expect(forgotten == [2, 3], "removed from the store unsent")
        #expect(lane.backlog == 0 && lane.isEmpty)
    }

    @Test("while its endpoint fails a lane still resets a new room's cursor and reads one chunk of what a deleted room owes, then stops; shutting down, it reads nothing")
    func storeWorkWhileFailing() {
        var lane = DeliveryLane()
        lane.created(RoomNotice(event: .roomCreated, time: 1_000), at: 1_000)
        #expect(lane.hasStoreWork)
        guard case .resetCursor(.zero, _) = lane.next(endpointFailing: true, chunk: 2) else {
            Issue.record("expected the cursor reset"); return
        }
        lane.didReset(.zero)
        #expect(!lane.hasStoreWork)
        guard case .stop = lane.next(endpointFailing: true, chunk: 2) else { Issue.record("expected a stop"); return }
        lane.revisionDurable(3)
        lane.deleted(RoomNotice(event: .roomDeleted, time: 2_000), owed: true)
        #expect(lane.hasStoreWork)
        // The deleted room's cursor goes first (even while shutting down, as before).
        guard case .resetCursor(.forget, _) = lane.next(endpointFailing: true, stopping: true, chunk: 2) else {
            Issue.record("expected the cursor removed"); return
        }
        lane.didReset(.forget)
        guard case .stop = lane.next(endpointFailing: true, stopping: true, chunk: 2) else {
            Issue.record("expected a stop while shutting down"); return
        }
        guard case .loadOwed(after: nil, limit: 2) = lane.next(endpointFailing: true, chunk: 2) else {
            Issue.record("expected a read of what is owed"); return
        }
        // The store kept none (say): the short read clears the guess; the backlog is room.deleted alone.
        lane.owedLoaded([], after: nil, limit: 2)
        #expect(lane.backlog == 2 && !lane.hasStoreWork)
        guard case .stop = lane.next(endpointFailing: true, chunk: 2) else { Issue.record("expected a stop"); return }

        // A room made and deleted while failing: room.created comes first, so the owed revisions are
        // read one chunk while failing, not all of them; the rest when the endpoint is back.
        var made = DeliveryLane()
        made.created(RoomNotice(event: .roomCreated, time: 1_000), at: 1_000)
        guard case .resetCursor(.zero, _) = made.next(endpointFailing: true, chunk: 2) else { Issue.record("expected the reset"); return }
        made.didReset(.zero)
        made.revisionDurable(5)
        made.deleted(RoomNotice(event: .roomDeleted, time: 2_000), owed: true)
        guard case .resetCursor(.forget, _) = made.next(endpointFailing: true, chunk: 2) else { Issue.record("expected the forget"); return }
        made.didReset(.forget)
        guard case .loadOwed(after: nil, limit: 2) = made.next(endpointFailing: true, chunk: 2) else {
            Issue.record("expected the first read"); return
        }
        let owed = (1...2).map { RoomNotice(event: .revision, time: 2_000, revision: revision($0)) }
        made.owedLoaded(owed, after: nil, limit: 2)
        #expect(!made.hasStoreWork)
        guard case .stop = made.next(endpointFailing: true, chunk: 2) else { Issue.record("expected a stop"); return }
        // Back: the next chunk is read (room.created, earlier, waits for all of them to be read).
        guard case .loadOwed(after: OwedPosition(time: 2_000, rev: 2), limit: 2) = made.next(endpointFailing: false, chunk: 2) else {
            Issue.record("expected the next read"); return
        }
    }

    @Test("a room loaded from the store reads the notices kept for it before anything else: the import command's room.created comes before the revisions")
    func loadedRoomReadsItsNoticesFirst() {
        var lane = DeliveryLane()
        lane.mayHaveNotices()
        lane.revisionDurable(3, after: 3)  // the load: the head is 3
        guard case .loadNotices = lane.next(endpointFailing: false, chunk: 10) else { Issue.record("expected the notices read"); return }
        lane.noticesRead([RoomNotice(event: .roomCreated, time: 1_000)])
        #expect(lane.backlog == 4, "room.created, and the lane starts at 0: revisions 1-3")
        guard case .post(.notice(let notice), let generation) = lane.next(endpointFailing: false, chunk: 10) else {
            Issue.record("expected room.created first"); return
        }
        #expect(notice.event == .roomCreated)
        lane.delivered(.notice(notice), generation: generation)
        guard case .forgetNotice(let done) = lane.next(endpointFailing: false, chunk: 10) else { Issue.record("expected the notice forgotten"); return }
        lane.forgot(done)
        // Then the stored cursor (0, as the command wrote it), and the revisions from the first.
        guard case .loadCursor = lane.next(endpointFailing: false, chunk: 10) else { Issue.record("expected the cursor read"); return }
        lane.loaded(WebhookCursor(rev: 0, life: nil))
        guard case .read(after: 0, through: 3, _) = lane.next(endpointFailing: false, chunk: 10) else {
            Issue.record("expected revisions 1-3 read"); return
        }
    }

    @Test("a lane told at a start or a scan how many revisions the store keeps for it counts them until they are read; a final short read clears the rest")
    func owedCountFromTheStore() {
        var lane = DeliveryLane()
        lane.mayBeOwed(count: 5)
        #expect(lane.backlog == 5)
        func owed(_ numbers: ClosedRange<Int>) -> [RoomNotice] {
            numbers.map { RoomNotice(event: .revision, time: 2_000, revision: revision($0)) }
        }
        guard case .loadOwed(after: nil, limit: 2) = lane.next(endpointFailing: false, chunk: 2) else {
            Issue.record("expected a read of what is owed"); return
        }
        lane.owedLoaded(owed(1...2), after: nil, limit: 2)
        #expect(lane.backlog == 5 && lane.owedPending)
        // Fewer were left than counted: the final short read says none is left.
        lane.owedLoaded(owed(3...3), after: OwedPosition(time: 2_000, rev: 2), limit: 2)
        #expect(lane.backlog == 3 && !lane.owedPending)
        #expect(lane.owedUnread == 0)
    }

    @Test("the cursor is written after cursorBatch deliveries or cursorInterval ms, not after each; the rest waits for the next write")
    func cursorWritesAreBatched() {
        var lane = DeliveryLane()
        lane.resume(head: 0, stored: WebhookCursor(rev: 0, life: nil))
        for rev in 1...5 { lane.revisionDurable(rev) }
        func step(_ now: Int64) -> DeliveryLane.Step { lane.next(endpointFailing: false, chunk: 10, now: now, cursorBatch: 3, cursorInterval: 250) }
        guard case .read(after: 0, through: 5, let generation) = step(1_000) else { Issue.record("expected a read"); return }
        _ = lane.read((1...5).map(revision), after: 0, through: 5, generation: generation)
        var writes: [Int] = []
        var now: Int64 = 1_000
        loop: while true {
            now += 10
            switch step(now) {
            case .post(let item, let generation): lane.delivered(item, generation: generation)
            case .writeCursor(let rev, _): writes.append(rev); lane.wrote(rev, now: now)
            case .stop: break loop
            default: Issue.record("unexpected step"); return
            }
        }
        #expect(writes == [1, 4], "the first at once, then after three more deliveries; the fifth waits")
        #expect(lane.unwritten == 5 && lane.backlog == 0)
        guard case .writeCursor(5, _) = step(now + 250) else { Issue.record("the interval has passed: the rest is due"); return }
    }

    @Test("the copy of recent revisions answers only what it holds whole; a gap starts it again")
    func recentRevisions() {
        var recent = RecentRevisions()
        recent.add((1...5).map(revision))
        #expect(recent.revisions(after: 2, through: 4)?.map(\.number) == [3, 4])
        #expect(recent.revisions(after: 0, through: 5)?.map(\.number) == [1, 2, 3, 4, 5])
        #expect(recent.revisions(after: 4, through: 6) == nil, "6 is not here: the store answers")
        recent.add([revision(5), revision(8)])
        #expect(recent.revisions(after: 2, through: 4) == nil && recent.revisions(after: 7, through: 8)?.map(\.number) == [8])
        recent.add((9...(9 + RecentRevisions.capacity)).map(revision))
        #expect(recent.revisions.count == RecentRevisions.capacity)
    }

    @Test("a delivery of a room's old life that returns after the room began anew changes nothing")
    func oldGenerationIsDropped() {
        var lane = DeliveryLane()
        lane.created(nil)
        lane.revisionDurable(1)
        _ = lane.next(endpointFailing: false, chunk: 10)  // reset
        lane.didReset(.zero)
        guard case .read(after: 0, through: 1, let old) = lane.next(endpointFailing: false, chunk: 10) else {
            Issue.record("expected a read"); return
        }
        _ = lane.read([revision(1)], after: 0, through: 1, generation: old)
        lane.deleted(RoomNotice(event: .roomDeleted, time: 5))
        lane.created(RoomNotice(event: .roomCreated, time: 6))
        lane.delivered(.revision(revision(1)), generation: old)
        #expect(lane.cursor == 0 && lane.head == 0 && lane.unwritten == nil)
        #expect(lane.failed(.revision(revision(1)), now: 0, policy: WebhookPolicy(), unit: 0.5, generation: old) == .moveOn)
        guard case .resetCursor(.zero, _) = lane.next(endpointFailing: false, chunk: 10) else { Issue.record("expected reset"); return }
        lane.didReset(.zero)
        guard case .post(.notice(let notice), _) = lane.next(endpointFailing: false, chunk: 10) else { Issue.record("expected notice"); return }
        #expect(notice.event == .roomDeleted)
    }

    @Test("revisions the store no longer has are skipped and reported; failures back off until the give-up period")
    func gapsAndGivingUp() {
        var lane = DeliveryLane()
        lane.resume(head: 5, stored: WebhookCursor(rev: 0, life: nil))
        #expect(lane.read([revision(2), revision(4)], after: 0, through: 5, generation: 0) == [1, 3])
        let policy = WebhookPolicy(backoffStart: 100, backoffMax: 1_000, jitter: 0, giveUpAfter: 500)
        #expect(lane.failed(.revision(revision(2)), now: 1_000, policy: policy, unit: 0.5, generation: 0) == .after(milliseconds: 100))
        #expect(lane.failed(.revision(revision(2)), now: 1_100, policy: policy, unit: 0.5, generation: 0) == .after(milliseconds: 200))
        #expect(lane.isRetrying)
        #expect(lane.failed(.revision(revision(2)), now: 1_500, policy: policy, unit: 0.5, generation: 0) == .giveUp)
        guard case .stop = lane.next(endpointFailing: true, chunk: 10) else { Issue.record("a failing endpoint stops"); return }
        lane.delivered(.revision(revision(2)), generation: 0)
        #expect(!lane.isRetrying && lane.cursor == 2)
        lane.delivered(.revision(revision(4)), generation: 0)
        #expect(lane.read([], after: 4, through: 5, generation: 0) == [5])
        #expect(lane.cursor == 5 && lane.backlog == 0)
    }

    // MARK: From the model test (session 46)

    /// A revision of a deleted room kept for the endpoint, at the deletion's time.
    func owed(_ number: Int, deletedAt time: Int64) -> RoomNotice {
        RoomNotice(event: .revision, time: time, revision: revision(number))
    }

    /// Runs a deleted room's lane to its stop, the store keeping `kept` for it: what it posted (owed
    /// revisions by number, room events by name) and the owed revisions it removed from the store unsent;
    /// nil (with an issue) at any other step.
    func drainDeletion(_ lane: inout DeliveryLane, kept: [RoomNotice],
                       step: (inout DeliveryLane) -> DeliveryLane.Step) -> (posted: [String], forgotten: [Int])? {
        var posted: [String] = [], forgotten: [Int] = []
        while true {
            switch step(&lane) {
            case .resetCursor(let reset, _): lane.didReset(reset)
            case .loadOwed(let after, let limit):
                lane.owedLoaded(Array(kept.filter { after == nil || $0.owedPosition! > after! }.prefix(limit)), after: after, limit: limit)
            case .forgetNotice(let notice):
                if let number = notice.revision?.number, !posted.contains("\(number)") { forgotten.append(number) }
                lane.forgot(notice)
            case .post(.notice(let notice), let generation):
                posted.append(notice.revision.map { "\($0.number)" } ?? notice.event.rawValue)
                lane.delivered(.notice(notice), generation: generation)
            case .stop: return (posted, forgotten)
            default: Issue.record("unexpected step"); return nil
            }
        }
    }

    @Test("an owed read asked for before a deletion does not say that none is left: the deletion's owed revisions are read next")
    func owedReadAcrossADeletion() {
        var lane = DeliveryLane()
        lane.mayBeOwed(count: 1)                                   // the start: one kept of an earlier life
        guard case .loadOwed(after: nil, limit: 10) = lane.next(endpointFailing: false, chunk: 10) else {
            Issue.record("expected the owed read"); return
        }
        lane.deleted(RoomNotice(event: .roomDeleted, time: 9_000), owed: true, at: 9_000)  // while it runs
        lane.owedLoaded([owed(1, deletedAt: 2_000)], after: nil, limit: 10)  // found before the deletion
        #expect(lane.owedPending, "the deletion kept more, after what the read found")
        guard case .resetCursor(.forget, _) = lane.next(endpointFailing: false, chunk: 10) else { Issue.record("expected forget"); return }
        lane.didReset(.forget)
        guard case .post(.notice(let first), let generation) = lane.next(endpointFailing: false, chunk: 10) else {
            Issue.record("expected the owed revision"); return
        }
        lane.delivered(.notice(first), generation: generation)
        lane.forgot(first)
        guard case .loadOwed(after: OwedPosition(time: 2_000, rev: 1)?, limit: 10) = lane.next(endpointFailing: false, chunk: 10) else {
            Issue.record("expected the owed read again before room.deleted"); return
        }
    }

    @Test("a revision whose POST was under way at the deletion and answered 2xx is not sent again as owed, also when the room was made and deleted again meanwhile",
          arguments: [false, true])
    func underWayAtTheDeletion(againMeanwhile: Bool) {
        var lane = DeliveryLane()
        lane.created(nil, at: 1_000)
        guard case .resetCursor(.zero, _) = lane.next(endpointFailing: false, chunk: 10) else { Issue.record("expected reset"); return }
        lane.didReset(.zero)
        lane.revisionDurable(1)
        lane.revisionDurable(2)
        guard case .read(after: 0, through: 2, let generation) = lane.next(endpointFailing: false, chunk: 10) else {
            Issue.record("expected a read"); return
        }
        _ = lane.read([revision(1), revision(2)], after: 0, through: 2, generation: generation)
        _ = lane.next(endpointFailing: false, chunk: 10)
        lane.delivered(.revision(revision(1)), generation: generation)
        guard case .writeCursor(1, _) = lane.next(endpointFailing: false, chunk: 10) else { Issue.record("expected cursor 1"); return }
        lane.wrote(1)
        guard case .post(.revision(let under), generation) = lane.next(endpointFailing: false, chunk: 10), under.number == 2 else {
            Issue.record("expected revision 2 posted"); return
        }
        lane.deleted(RoomNotice(event: .roomDeleted, time: 9_000), owed: true, at: 9_000)  // keeps 2: after cursor 1
        if againMeanwhile {                                                  // a review: one deletion was remembered
            lane.created(nil, at: 9_500)
            lane.deleted(RoomNotice(event: .roomDeleted, time: 9_800), owed: true, at: 9_800)
        }
        lane.delivered(.revision(under), generation: generation)                            // then its 2xx
        guard case .resetCursor(.forget, _) = lane.next(endpointFailing: false, chunk: 10) else { Issue.record("expected forget"); return }
        lane.didReset(.forget)
        guard case .loadOwed(after: nil, limit: 10) = lane.next(endpointFailing: false, chunk: 10) else { Issue.record("expected owed read"); return }
        lane.owedLoaded([owed(2, deletedAt: 9_000)], after: nil, limit: 10)
        guard case .forgetNotice(let forgotten) = lane.next(endpointFailing: false, chunk: 10) else {
            Issue.record("expected revision 2's record forgotten, not posted again"); return
        }
        #expect(forgotten.revision?.number == 2)
    }

    @Test("each deletion remembers what had been sent of its own life: a room made and deleted again before the first's owed revisions are read")
    func twoDeletionsBeforeTheOwedRead() {
        var lane = DeliveryLane()
        func step() -> DeliveryLane.Step { lane.next(endpointFailing: false, chunk: 10, cursorBatch: 10, cursorInterval: 60_000) }
        lane.created(nil, at: 1_000)
        guard case .resetCursor(.zero, _) = step() else { Issue.record("expected reset"); return }
        lane.didReset(.zero)
        lane.revisionDurable(1)
        lane.revisionDurable(2)
        guard case .read(after: 0, through: 2, let generation) = step() else { Issue.record("expected a read"); return }
        _ = lane.read([revision(1), revision(2)], after: 0, through: 2, generation: generation)
        _ = step()
        lane.delivered(.revision(revision(1)), generation: generation)   // both sent, the stored cursor still 0
        _ = step()
        lane.delivered(.revision(revision(2)), generation: generation)
        lane.deleted(RoomNotice(event: .roomDeleted, time: 5_000), owed: true, at: 5_000)  // keeps 1 and 2
        lane.created(nil, at: 6_000)
        lane.deleted(RoomNotice(event: .roomDeleted, time: 7_000), owed: true, at: 7_000)  // nothing sent of this life
        guard case .resetCursor(.forget, _) = step() else { Issue.record("expected forget"); return }
        lane.didReset(.forget)
        guard case .loadOwed(after: nil, limit: 10) = step() else { Issue.record("expected owed read"); return }
        lane.owedLoaded([owed(1, deletedAt: 5_000), owed(2, deletedAt: 5_000)], after: nil, limit: 10)
        guard case .forgetNotice(let forgotten) = step() else { Issue.record("expected the first life's revisions forgotten, not posted again"); return }
        #expect(forgotten == owed(1, deletedAt: 5_000))
    }
}
