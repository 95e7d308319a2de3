import SwoopKit
import Testing

/// The catalogue's pure decisions, every case.
@Suite("CatalogueRules: controls, claim ends and fleet limits")
struct CatalogueRulesTests {
    typealias Change = CatalogueRules.Change

    /// Every control in every state, with nothing asked before: (state, effect) after it.
    @Test(arguments: CatalogueControl.allCases)
    func aControlInEveryState(control: CatalogueControl) {
        let expected: [Download.State: (Download.State, CatalogueControl?, ControlEffect)]
        switch control {
        case .pause:
            expected = [
                .waiting: (.paused, nil, .done(.paused)), .interrupted: (.paused, nil, .done(.paused)),
                .active: (.active, .pause, .asked(node: "n")), .paused: (.paused, nil, .unchanged(.paused)),
                .completed: (.completed, nil, .refused(.completed)), .failed: (.failed, nil, .refused(.failed)),
                .removed: (.removed, nil, .refused(.removed)),
            ]
        case .resume:
            expected = [
                .waiting: (.waiting, nil, .unchanged(.waiting)), .interrupted: (.waiting, nil, .done(.waiting)),
                .active: (.active, nil, .unchanged(.active)), .paused: (.waiting, nil, .done(.waiting)),
                .completed: (.completed, nil, .refused(.completed)), .failed: (.waiting, nil, .done(.waiting)),
                .removed: (.removed, nil, .refused(.removed)),
            ]
        case .remove:
            expected = [
                .waiting: (.removed, nil, .done(.removed)), .interrupted: (.removed, nil, .done(.removed)),
                .active: (.active, .remove, .asked(node: "n")), .paused: (.removed, nil, .done(.removed)),
                .completed: (.removed, nil, .done(.removed)), .failed: (.removed, nil, .done(.removed)),
                .removed: (.removed, nil, .unchanged(.removed)),
            ]
        }
        #expect(Set(expected.keys) == Set(Download.State.allCases))
        for (state, (after, requested, effect)) in expected {
            let change = CatalogueRules.apply(control, to: state, requested: nil, node: "n")
            #expect(change == Change(state: after, requested: requested, effect: effect), "\(control) in \(state)")
        }
    }

    @Test func whatWasAskedOfARunningDownloadAndTheNextControl() {
        // A pause asked, then: resume takes it back; remove replaces it; pause again changes nothing.
        #expect(CatalogueRules.apply(.resume, to: .active, requested: .pause, node: "n") == Change(state: .active, requested: nil, effect: .done(.active)))
        #expect(CatalogueRules.apply(.remove, to: .active, requested: .pause, node: "n") == Change(state: .active, requested: .remove, effect: .asked(node: "n")))
        #expect(CatalogueRules.apply(.pause, to: .active, requested: .pause, node: "n") == Change(state: .active, requested: .pause, effect: .asked(node: "n")))
        // A remove asked: neither a pause nor a resume undoes it.
        #expect(CatalogueRules.apply(.pause, to: .active, requested: .remove, node: "n") == Change(state: .active, requested: .remove, effect: .unchanged(.active)))
        #expect(CatalogueRules.apply(.resume, to: .active, requested: .remove, node: "n") == Change(state: .active, requested: .remove, effect: .unchanged(.active)))
    }

    @Test func theStateAClaimsEndLeaves() {
        let outcomes: [ClaimOutcome] = [.completed(fileName: "f", totalBytes: 1), .failed("x"), .paused, .removed, .released]
        let plain: [Download.State] = [.completed, .failed, .paused, .removed, .waiting]
        #expect(outcomes.map { CatalogueRules.settled($0, requested: nil) } == plain)
        // Only a node giving its claim back defers to what was asked of it.
        #expect(outcomes.map { CatalogueRules.settled($0, requested: .pause) } == [.completed, .failed, .paused, .removed, .paused])
        #expect(outcomes.map { CatalogueRules.settled($0, requested: .remove) } == [.completed, .failed, .paused, .removed, .removed])
        #expect(CatalogueRules.settled(.released, requested: .resume) == .waiting)
    }

    @Test func claimsHonourTheFleetsLimitsInQueueOrder() {
        let candidates = ["a1": "a", "a2": "a", "b1": "b", "a3": "a", "c1": "c"].sorted { $0.key < $1.key }
            .map { CatalogueRules.Candidate(id: Download.ID($0.key), host: $0.value) }
        // Order: a1, a2, a3, b1, c1.
        func choose(_ count: Int, active: Int = 0, perHost: [String: Int] = [:], maxActive: Int? = nil, maxPerHost: Int? = nil) -> [String] {
            let request = ClaimRequest(node: "n", count: count, lease: .seconds(1), maxActive: maxActive, maxPerHost: maxPerHost)
            return CatalogueRules.choose(candidates, active: active, perHost: perHost, for: request).map(\.rawValue)
        }
        #expect(choose(3) == ["a1", "a2", "a3"])
        #expect(choose(10) == ["a1", "a2", "a3", "b1", "c1"])
        #expect(choose(0).isEmpty)
        #expect(choose(10, maxPerHost: 1) == ["a1", "b1", "c1"])
        #expect(choose(10, perHost: ["a": 1, "b": 1], maxPerHost: 2) == ["a1", "b1", "c1"])
        #expect(choose(10, perHost: ["a": 2, "b": 1], maxPerHost: 2) == ["b1", "c1"])
        #expect(choose(10, active: 3, maxActive: 5) == ["a1", "a2"])
        #expect(choose(10, active: 7, maxActive: 5).isEmpty)
        #expect(choose(2, active: 0, maxActive: 5, maxPerHost: 1) == ["a1", "b1"])
        #expect(CatalogueRules.fullHosts(["a": 2, "b": 1, "c": 3], maxPerHost: 2) == ["a", "c"])
        #expect(CatalogueRules.fullHosts(["a": 2], maxPerHost: nil).isEmpty)
    }
}
