import Foundation
import Logging

extension FleetMember {
    /// Checks that no other daemon runs as this node. A node of this name heard from within the
    /// lease is waited for, up to a lease and a heartbeat, to go silent (this daemon's own earlier
    /// run, killed: a service manager restarts it at once); one that keeps beating is another
    /// daemon given the same `--node`, and refused: two daemons under one name would each renew and
    /// end the other's claims.
    public static func join(catalogue: any DownloadCatalogue, settings: Settings, logger: Logger) async throws {
        let deadline = ContinuousClock.now + settings.lease + settings.heartbeat
        var told = false
        while true {
            let nodes = try await catalogue.nodes()
            // Every daemon of a fleet shares one directory, or none does: a part is written at the path its split named.
            let mine = settings.sharedDirectory ?? ""
            if let other = nodes.first(where: { $0.name != settings.node && $0.silentFor < settings.lease.seconds && $0.sharedDirectory != mine }) {
                let theirs = other.sharedDirectory.isEmpty ? "writes into a directory of its own" : "shares \(other.sharedDirectory)"
                let this = mine.isEmpty ? "would write into its own" : "would share \(mine)"
                throw SwoopError(
                    .invalidArgument,
                    "node \(other.name) of this fleet \(theirs); this daemon \(this): give every daemon of a fleet the same -d with --shared-dir, or none"
                )
            }
            // Taken at once when free (or silent for a lease): two daemons starting together never both get it.
            let beat = NodeBeat(name: settings.node, address: settings.address, sharedDirectory: mine, instance: settings.instance)
            guard let twin = try await catalogue.join(beat, lease: settings.lease) else { return }
            if ContinuousClock.now >= deadline {
                let address = twin.address.isEmpty ? "" : " at \(twin.address)"
                throw SwoopError(
                    .inUse,
                    "another daemon runs as node \(settings.node) of this fleet (heard from \(Int(twin.silentFor)) s ago\(address)): give each daemon its own --node"
                )
            }
            if !told {
                logger.notice("node \(settings.node) was heard from \(Int(twin.silentFor)) s ago: waiting up to the lease for it to go silent")
                told = true
            }
            try await Task.sleep(for: .milliseconds(250))
        }
    }
}
