import Testing

@testable import SwoopKit

@Suite("Download state machine")
struct DownloadStateMachineTests {
    typealias Request = DownloadStateMachine.Request

    /// Every allowed transition; everything else must be refused.
    static let allowed: [Download.State: [Request: Download.State]] = [
        .waiting: [.start: .active, .pause: .paused, .remove: .removed],
        .active: [
            .complete: .completed, .fail: .failed, .pause: .paused, .interrupt: .interrupted, .remove: .removed, .recover: .waiting,
        ],
        .paused: [.resume: .waiting, .remove: .removed],
        // A bare resume continues it; a pause keeps it from that.
        .interrupted: [.resume: .waiting, .pause: .paused, .remove: .removed],
        .failed: [.resume: .waiting, .remove: .removed],
        .completed: [.invalidate: .waiting, .remove: .removed],
        .removed: [:],
    ]

    @Test(arguments: Download.State.allCases, Request.allCases)
    func everyPairIsEitherATransitionOrAClearRefusal(state: Download.State, request: Request) {
        let result = DownloadStateMachine.next(after: state, on: request)
        if let expected = Self.allowed[state]?[request] {
            #expect((try? result.get()) == expected)
        } else {
            guard case .failure(let error) = result else {
                Issue.record("\(request) from \(state) must be refused")
                return
            }
            #expect(error.code == .invalidArgument)
            #expect(!error.message.isEmpty)
        }
    }

    @Test func refusalsSayWhy() {
        #expect(message(.completed, .resume) == "the download is already complete")
        #expect(message(.removed, .pause) == "the download was removed")
        #expect(message(.paused, .pause) == "the download is already paused")
        #expect(message(.waiting, .complete) == "cannot complete a download that is waiting")
    }

    @Test func removedIsTerminal() {
        for request in Request.allCases {
            #expect(throws: SwoopError.self) { try DownloadStateMachine.next(after: .removed, on: request).get() }
        }
    }

    private func message(_ state: Download.State, _ request: Request) -> String? {
        guard case .failure(let error) = DownloadStateMachine.next(after: state, on: request) else { return nil }
        return error.message
    }
}
