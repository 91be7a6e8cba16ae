import Foundation

extension Bench {
    // MARK: 7. Idle

    /// How often an idle participant wakes: two `openudid serve` apps share an
    /// identifier, then nothing happens, and every thread of the second is
    /// counted each time the kernel switched to it (voluntary and involuntary
    /// switches, from /proc). A desktop app that sleeps should not wake at all.
    func idleWakeups() throws {
        log("idle: wake-ups of a participant while nothing happens")
        results.add(
            Figure(
                "idle.wakeups", "wake-ups of an idle `openudid serve` app beside another, per 30 s (file mirror)", unit: .count,
                samples: try idleSamples(environment: environment, mirror: "file", namespace: "idle"), target: .atMost(5)))
        let keyring: PrivateKeyring
        do {
            keyring = try PrivateKeyring(scratch: scratch)
        } catch {
            results.add(
                .skipped("idle.wakeups.secret-service", "the same with the Secret Service mirror", unit: .count, because: "\(error)"))
            return
        }
        var withKeyring = environment
        withKeyring["DBUS_SESSION_BUS_ADDRESS"] = keyring.address
        results.add(
            Figure(
                "idle.wakeups.secret-service", "the same with the Secret Service mirror (gnome-keyring)", unit: .count,
                samples: try idleSamples(environment: withKeyring, mirror: "secret-service", namespace: "idle-keyring"),
                target: .atMost(5)))
    }

    /// The wake-ups of the second app in each window, scaled to 30 s.
    private func idleSamples(environment: [String: String], mirror: String, namespace: String) throws -> [Double] {
        let apps = try ["com.bench.idle-a", "com.bench.idle-b"].map { app in
            try Child(
                tools.openudid, ["serve", "--app", app, "--namespace", namespace, "--mirror", mirror],
                environment: environment, scratch: scratch.path)
        }
        defer { for app in apps { app.stop() } }
        let first = apps.map { $0.nextLine(timeout: 30) }
        guard let identifier = first[0], identifier.count == 40, first[1] == identifier else {
            throw BenchError("the idle pair did not agree: \(first) \(apps.map(\.standardError))")
        }
        // Let the second app's answer to the first one's read, and any late
        // read, pass before counting.
        Thread.sleep(forTimeInterval: 1)
        let (windows, seconds) = plan.idle
        var samples: [Double] = []
        for _ in 0..<windows {
            let before = apps[1].contextSwitches
            Thread.sleep(forTimeInterval: seconds)
            let after = apps[1].contextSwitches
            guard let before, let after else { throw BenchError("could not read /proc for the idle app") }
            samples.append(Double(after - before) * 30 / seconds)
        }
        guard apps.allSatisfy(\.isRunning), apps[1].takeLines().isEmpty else {
            throw BenchError("an idle app exited or changed its identifier: \(apps.map(\.standardError))")
        }
        return samples
    }
}
