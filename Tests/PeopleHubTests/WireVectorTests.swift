import Foundation
import PeopleCore
import Testing
import WebSocketTransport

/// The shared undo vectors (`Tests/Vectors/undo.json`, among them every worked case of SEMANTICS §5),
/// replayed over real WebSockets against a real hub: each case's users connect to a hub seeded with the
/// case's people and run with its policy; an observer connection mirrors the room from the `ops` it
/// receives. Every reply (rev, noop, skipped) and every expected model is checked as the users and the
/// observer see them.
@Suite("Undo vectors against a running hub")
struct WireVectorTests {
    static let cases: [WireVector] = ["undo.json", "history.json"].flatMap { name -> [WireVector] in
        let path = HubProcess.packageRoot.appendingPathComponent("Tests/Vectors/" + name).path
        let bytes = Array(FileManager.default.contents(atPath: path) ?? Data())
        guard case .array(let cases)? = try? JSON.parse(bytes)["cases"] else { return [] }
        return cases.map(WireVector.init)
    }

    @Test("the vector file is there and holds every worked case of §5")
    func inventory() {
        #expect(Self.cases.count >= 24)
        for n in 1...12 { #expect(Self.cases.contains { $0.name.hasPrefix("§5.\(n) ") }, "§5.\(n) missing") }
        for n in 1...8 { #expect(Self.cases.contains { $0.name.contains("H\(n) ") }, "H\(n) missing") }
    }

    @Test("undo vector over the wire", arguments: cases)
    func replay(_ vector: WireVector) async throws {
        // A timed case whose machine stalled past the (stretched) window between two batches that the
        // vector means to coalesce proves nothing either way: it is run again, at most three times.
        for attempt in 1...3 {
            do {
                try await replayOnce(vector)
                return
            } catch let stalled as TimingDisturbed {
                if attempt == 3 { Issue.record("\(vector): the machine stalled on every attempt: \(stalled)") }
            }
        }
    }

    /// Two batches the vector places inside the coalescing window reached the hub further apart than the window.
    struct TimingDisturbed: Error, CustomStringConvertible {
        let description: String
    }

    private func replayOnce(_ vector: WireVector) async throws {
        let json = vector.json
        let policy = json["policy"]
        var config = "undo:\n"
        if case .string(let conflicts)? = policy?["conflicts"] { config += "  conflicts: \(conflicts)\n" }
        if case .bool(let cascade)? = policy?["cascade"] { config += "  cascade: \(cascade)\n" }
        // Coalescing depends on the time between batches. Those cases run in real time, stretched by
        // `stretch`. A loaded machine can still push two batches across the window's edge (a fresh
        // clone's parallel run once delayed a step by over 500 ms): a keyed batch whose gap at the hub
        // may be on the other side of the window than the vector's is a stall, and `replay` runs the case again.
        let timed = stepList(of: json).contains { $0["coalesce"] != nil }
        let stretch: Int64 = timed ? 5 : 1
        let window = Int64(int(policy?["coalesceMillis"]) ?? 500)
        config += "  coalesceMillis: \(window * stretch)\n"
        guard case .array(let start)? = json["start"], case .array(let userList)? = json["users"],
              case .array(let steps)? = json["steps"] else {
            Issue.record("\(vector): malformed")
            return
        }
        let hub = try await HubProcess.start(config: config, seed: JSON.array(start).text)
        let client = try WebSocketClient()
        var users: [String: TestClient] = [:]
        do {
            let url = hub.url(room: "vector")
            // Users join in the listed order (so their tag blocks are the ones the vectors expect), then the observer.
            for case .string(let name) in userList {
                users[name] = try await TestClient.joined(url, user: name, on: client)
            }
            let observer = try await TestClient.joined(url, user: "observer", on: client)
            var mirror = PeopleModel(people: try start.map { try Person(json: $0) })
            var mirrorRev = 0
            var head = 0
            var time: Int64 = 0
            var previousTime: Int64?
            var previousStep = Date()
            // Per user, their last batch that made a revision: its time in the vector and when it was sent.
            var lastEdit: [String: (time: Int64, sent: Date, answered: Date)] = [:]

            for (index, step) in steps.enumerated() {
                let context = "\(vector) step \(index)"
                guard case .string(let name)? = step["user"], let user = users[name] else {
                    Issue.record("\(context): unknown user")
                    return
                }
                time = int(step["at"]).map(Int64.init) ?? time + 1000
                if timed, let previousTime {
                    // Each gap at least as long as the vector's (stretched); a gap past the window is
                    // cut to just past it, which coalesces the same way.
                    let gap = min(time - previousTime, window + 100) * stretch
                    let wait = previousStep.addingTimeInterval(Double(gap) / 1000).timeIntervalSinceNow
                    if wait > 0 { try await Task.sleep(for: .milliseconds(Int(wait * 1000))) }
                }
                previousTime = time
                previousStep = Date()
                let expect = step["expect"]
                if case .array(let ops)? = step["submit"] {
                    let diffs = try ops.map { try Diff(json: $0) }
                    var label: String? = nil
                    if case .string(let l)? = step["label"] { label = l }
                    var coalesce: String? = nil
                    if case .string(let c)? = step["coalesce"] { coalesce = c }
                    let sent = Date()
                    let seq = user.submit(diffs, base: int(step["base"]) ?? head, label: label, coalesce: coalesce)
                    if case .string(let code)? = expect?["error"] {
                        // A refused batch: answered with the error under its seq; nothing is broadcast.
                        let error = try await user.error(seq: seq)
                        #expect(error.code.rawValue == code, "\(context)")
                    } else {
                        let ack = try await user.ack(seq: seq)
                        let answered = Date()
                        if timed, coalesce != nil, let last = lastEdit[name] {
                            // The hub read its clock for each batch between its send and its answer.
                            let stretched = Double(window * stretch) / 1000
                            if time - last.time <= window, answered.timeIntervalSince(last.sent) >= stretched {
                                throw TimingDisturbed(description: "\(context) may have come over \(window * stretch) ms after its user's last edit")
                            }
                            if time - last.time > window, sent.timeIntervalSince(last.answered) <= stretched {
                                throw TimingDisturbed(description: "\(context) may have come within \(window * stretch) ms of its user's last edit")
                            }
                        }
                        if ack.rev > head { lastEdit[name] = (time, sent, answered) }
                        head = max(head, ack.rev)
                        if let rev = int(expect?["rev"]) { #expect(ack.rev == rev, "\(context)") }
                        if case .array(let noop)? = expect?["noop"] {
                            #expect(ack.noop == (try noop.map { try SkipReport(json: $0) }), "\(context)")
                        }
                    }
                } else if let restore = step["restore"] {
                    let seq = user.nextSeq()
                    user.send(.restore(.init(seq: seq, rev: int(restore["rev"]) ?? 0)))
                    let result = try await user.next("restored \(seq)") { if case .restored(let r) = $0, r.seq == seq { r } else { nil } }
                    if let rev = result.rev { head = max(head, rev) }
                    if expect?["rev"] != nil { #expect(result.rev == int(expect?["rev"]), "\(context)") }
                    if case .string(let label)? = expect?["label"] { #expect(result.label == label, "\(context)") }
                } else if let log = step["log"] {
                    user.send(.log(.init(seq: 900 + index, before: int(log["before"]), limit: int(log["limit"]) ?? 50,
                                         tag: int(log["tag"]))))
                    let page = try await user.next("log") { if case .log(let p) = $0, p.seq == 900 + index { p } else { nil } }
                    if case .array(let revs)? = expect?["revs"] { #expect(page.entries.map(\.rev) == revs.map { int($0) ?? -1 }, "\(context)") }
                    if case .array(let ids)? = expect?["entries"] { #expect(page.entries.map(\.entry) == ids.map { int($0) }, "\(context)") }
                    if case .bool(let more)? = expect?["more"] { #expect(page.more == more, "\(context)") }
                } else if let blame = step["blame"] {
                    user.send(.blame(.init(seq: 900 + index, tag: int(blame["tag"]) ?? 0)))
                    let b = try await user.next("blame") { if case .blame(let b) = $0, b.seq == 900 + index { b } else { nil } }
                    func same(_ writer: Writer?, _ json: JSON?) -> Bool {
                        writer?.user == { if case .string(let u)? = json?["user"] { u } else { nil } }() && writer?.rev == int(json?["rev"])
                    }
                    if expect?["created"] != nil { #expect(same(b.record.created, expect?["created"]), "\(context)") }
                    if case .object(let fields)? = expect?["fields"] {
                        for f in fields { #expect(same(BlameField(rawValue: f.key).flatMap { b.record.fields[$0] }, f.value), "\(context) \(f.key)") }
                    }
                } else if let entry = int(step["undo"]?["entry"]), case .string(let code)? = expect?["error"] {
                    let seq = user.nextSeq()
                    user.send(.undo(.init(seq: seq, entry: entry)))
                    #expect(try await user.error(seq: seq).code.rawValue == code, "\(context)")
                } else {
                    let redo = step["redo"] != nil
                    let scope = int((step["undo"] ?? step["redo"])?["scope"])
                    let entry = int(step["undo"]?["entry"])
                    let seq = user.nextSeq()
                    user.send(redo ? .redo(.init(seq: seq, scope: scope)) : .undo(.init(seq: seq, scope: scope, entry: entry)))
                    let result = try await user.undone(seq: seq)
                    if expect?["entry"] != nil { #expect(result.entry == int(expect?["entry"]), "\(context)") }
                    if let rev = result.rev { head = max(head, rev) }
                    if expect?["rev"] != nil { #expect(result.rev == int(expect?["rev"]), "\(context)") }
                    if case .array(let skipped)? = expect?["skipped"] {
                        #expect(result.skipped == (try skipped.map { try SkipReport(json: $0) }), "\(context)")
                    }
                }
                // The observer mirrors every revision from the ops frames it receives.
                while mirrorRev < head {
                    let ops = try await observer.ops(rev: mirrorRev + 1)
                    _ = try mirror.apply(batch: ops.ops)
                    mirrorRev = ops.rev
                }
                if case .array(let people)? = expect?["people"] {
                    #expect(mirror.people.elements == (try people.map { try Person(json: $0) }), "\(context)")
                }
            }
            if case .array(let people)? = json["people"] {
                #expect(mirror.people.elements == (try people.map { try Person(json: $0) }), "\(vector) final")
            }
            // A fresh client joining now gets the same people in its welcome.
            let late = try await TestClient.joined(url, user: "late", on: client)
            #expect(late.welcome?.people == mirror.people.elements, "\(vector) late joiner")
        } catch let stalled as TimingDisturbed {
            await client.shutdown()
            _ = await hub.stop()
            throw stalled
        } catch {
            Issue.record("\(vector): \(error); hub stderr: \(hub.stderrText())")
        }
        await client.shutdown()
        #expect(await hub.stop() == 0)
    }

    private func int(_ json: JSON?) -> Int? { if case .int(let n)? = json { n } else { nil } }

    private func stepList(of json: JSON) -> [JSON] { if case .array(let steps)? = json["steps"] { steps } else { [] } }
}

struct WireVector: CustomTestStringConvertible, CustomStringConvertible, Sendable {
    let json: JSON
    var name: String { if case .string(let s)? = json["name"] { s } else { "?" } }
    var description: String { name }
    var testDescription: String { name }
}
