/// A mistake in how a program was called: what is wrong, which command it was, and the likely fix.
///
/// Its description is one line, such as
/// `openudid get: unknown option '--ap' (did you mean '--app'?)`.
package struct UsageError: Error, CustomStringConvertible, Equatable {
    /// The exit status of every program in the package for a usage error.
    package static let exitStatus: Int32 = 2

    /// The command as typed, such as `openudid get`.
    package let command: String
    /// What is wrong, naming the word.
    package let message: String
    /// The word the user probably meant, if one is close.
    package let suggestion: String?

    /// A mistake in `command`.
    package init(command: String, message: String, suggestion: String? = nil) {
        self.command = command
        self.message = message
        self.suggestion = suggestion
    }

    /// The one line a program prints on standard error.
    package var description: String {
        "\(command): \(message)" + (suggestion.map { " (did you mean \(quoted($0))?)" } ?? "; see '\(command) --help'")
    }
}

/// How far apart two words are: the fewest insertions, deletions, substitutions and
/// swaps of neighbours that turn one into the other ("gte" is one from "get").
func editDistance(_ a: String, _ b: String) -> Int {
    let a = Array(a)
    let b = Array(b)
    var d = (0...a.count).map { i in (0...b.count).map { j in i == 0 ? j : (j == 0 ? i : 0) } }
    for i in a.indices {
        for j in b.indices {
            d[i + 1][j + 1] = min(d[i][j + 1] + 1, d[i + 1][j] + 1, d[i][j] + (a[i] == b[j] ? 0 : 1))
            if i > 0, j > 0, a[i] == b[j - 1], a[i - 1] == b[j] { d[i + 1][j + 1] = min(d[i + 1][j + 1], d[i - 1][j - 1] + 1) }
        }
    }
    return d[a.count][b.count]
}

/// The one candidate `word` was probably meant to be: the one it spells in other
/// capitals ("GET"), the only one it begins, or the nearest within a typo or two.
func suggestion(for word: String, among candidates: [String]) -> String? {
    let sameLetters = candidates.filter { $0.lowercased() == word.lowercased() }
    if sameLetters.count == 1 { return sameLetters[0] }
    let extensions = candidates.filter { $0.hasPrefix(word) }
    if word.count >= 2, extensions.count == 1 { return extensions[0] }
    let allowed = max(1, min(2, word.count / 3))
    let scored = candidates.map { ($0, editDistance(word, $0)) }.filter { $0.1 <= allowed }
    guard let best = scored.min(by: { $0.1 < $1.1 }) else { return nil }
    // Two equally near candidates: guessing one would mislead.
    return scored.filter { $0.1 == best.1 }.count == 1 ? best.0 : nil
}
