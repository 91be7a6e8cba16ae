import FoundationEssentials
import Glibc

/// Milliseconds since the Unix epoch, the time unit of every record.
enum Milliseconds {
    /// `date` in whole milliseconds since the epoch, clamped to `Int64`.
    static func since1970(_ date: Date) -> Int64 {
        let value = (date.timeIntervalSince1970 * 1000).rounded(.down)
        guard value.isFinite else { return value.isNaN ? 0 : (value < 0 ? .min : .max) }
        // Int64(_:) traps outside its range, so the ends are clamped first.
        if value >= 0x1p63 { return .max }
        if value < -0x1p63 { return .min }
        return Int64(value)
    }

    /// `milliseconds` as `YYYY-MM-DDTHH:MM:SS.sssZ`.
    ///
    /// Pure integer arithmetic (H. Hinnant's civil-from-days), so that any
    /// `Int64`, however absurd, formats without overflow or a trap; a hostile
    /// record's timestamp ends up in error messages.
    static func iso8601(_ milliseconds: Int64) -> String {
        let msPerDay: Int64 = 86_400_000
        var days = milliseconds / msPerDay
        var rest = milliseconds % msPerDay
        if rest < 0 {
            rest += msPerDay
            days -= 1
        }
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let shiftedMonth = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * shiftedMonth + 2) / 5 + 1
        let month = shiftedMonth < 10 ? shiftedMonth + 3 : shiftedMonth - 9
        let year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0)

        let hour = rest / 3_600_000
        let minute = rest / 60_000 % 60
        let second = rest / 1000 % 60
        let millisecond = rest % 1000
        let yearText = (0...9999).contains(year) ? padded(year, 4) : String(year)
        return
            "\(yearText)-\(padded(month, 2))-\(padded(day, 2))T\(padded(hour, 2)):\(padded(minute, 2)):\(padded(second, 2)).\(padded(millisecond, 3))Z"
    }

    /// How a duration reads in a message: "2 s", "0.5 s", "0.25 s".
    static func seconds(_ duration: Duration) -> String {
        let seconds = Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
        return seconds == seconds.rounded() && abs(seconds) < 1e15 ? "\(Int(seconds)) s" : "\(seconds) s"
    }

    private static func padded(_ value: Int64, _ width: Int) -> String {
        let digits = String(value)
        return String(repeating: "0", count: max(0, width - digits.count)) + digits
    }
}
