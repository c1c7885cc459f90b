import Foundation

extension LoadCommand {
    /// The human-readable summary of a run's JSON result: one labelled line per figure, then the verdict.
    static func table(_ r: [String: Any]) -> String {
        func number(_ value: Any?) -> Double { (value as? Double) ?? Double(value as? Int ?? 0) }
        func ms(_ key: String) -> String {
            guard let d = r[key] as? [String: Any] else { return "-" }
            return String(format: "%.2f / %.2f / %.2f ms", number(d["p50"]), number(d["p99"]), number(d["max"]))
        }
        var rows: [(String, String)] = [
            ("run", "\(r["label"]!): \(r["clients"]!) clients, \(r["rooms"]!) rooms, \(r["writers"]!) writers at \(r["rate"]!)/s each, \(r["seconds"]!) s, mix \(r["mix"]!)"),
            ("requests / revisions", "\(r["requests"]!) / \(r["revisions"]!)"
                + ((r["droppedByClient"] as? Int ?? 0) > 0 ? " (\(r["droppedByClient"]!) dropped unsent by the client: left empty by rebasing)" : "")),
            ("deliveries", String(format: "%d (%.0f /s)", r["deliveries"] as! Int, number(r["deliveriesPerSecond"]))),
            ("latency p50 / p99 / max", ms("latencyMillis")),
            ("join", String(format: "%.2f s for all; each ", number(r["joinSeconds"])) + ms("connectMillis")),
        ]
        if let answers = r["answerMillis"] as? [String: [String: Any]] {
            for kind in ["edit", "undo", "redo"] where (answers[kind]?["count"] as? Int ?? 0) > 0 {
                let a = answers[kind]!
                rows.append(("\(kind) answered p50 / p99", String(format: "%.2f / %.2f ms (%d)", number(a["p50"]),
                                                                   number(a["p99"]), a["count"] as? Int ?? 0)))
            }
        }
        if r["serverCPUSeconds"] != nil {
            let cpu = number(r["serverCPUSeconds"])
            rows.append(("server CPU", String(format: "%.3f s = %.2f µs / delivery (%.0f deliveries per CPU-second)",
                                                 cpu, number(r["serverCPUMicrosPerDelivery"]),
                                                 number(r["deliveriesPerServerCPUSecond"]))))
        }
        if let rss = r["serverRSSKiB"] as? [String: Int] {
            rows.append(("server RSS", String(format: "%d KiB before, %d joined, %d end; %.1f KiB per connection",
                                                 rss["before"]!, rss["joined"]!, rss["end"]!,
                                                 number(r["serverRSSKiBPerConnection"]))))
        }
        let problems = r["problems"] as! [String]
        rows.append(("checks", problems.isEmpty && r["converged"] as! Bool
                     ? "every client got every revision once, in order; \(r["comparedClients"]!) models equal the room's"
                     : "FAILED: \(problems.prefix(5).joined(separator: "; "))\(r["converged"] as! Bool ? "" : "; models differ")"))
        return rows.map { pad($0.0, 26) + $0.1 }.joined(separator: "\n")
    }
}
