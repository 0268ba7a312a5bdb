import Foundation

/// Measures elapsed time across pauses.
final class Stopwatch {
    private var started: Date?
    private var accumulated: TimeInterval = 0

    /// Starts or resumes timing.
    func start(at now: Date = Date()) {
        guard started == nil else { return }
        started = now
    }

    /// Pauses timing and returns the total so far.
    @discardableResult
    func stop(at now: Date = Date()) -> TimeInterval {
        if let began = started {
            accumulated += now.timeIntervalSince(began)
        }

        started = nil
        return accumulated
    }
}

/// Formats seconds as minutes and seconds, like "3:07".
func formatElapsed(_ seconds: TimeInterval) -> String {
    let whole = Int(seconds.rounded())

    return String(format: "%d:%02d", whole / 60, whole % 60)
}
