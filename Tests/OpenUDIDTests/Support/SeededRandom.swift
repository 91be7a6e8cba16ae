import Foundation

/// A seeded generator (SplitMix64) for randomised tests: the seed is printed,
/// and `OPENUDID_TEST_SEED` replays a failing run exactly.
struct SeededRandom: RandomNumberGenerator {
    private var state: UInt64

    init(seed: UInt64) { state = seed }

    /// A generator seeded from `OPENUDID_TEST_SEED`, or at random; prints the seed with `test`'s name.
    static func announced(_ test: String) -> SeededRandom {
        let seed =
            ProcessInfo.processInfo.environment["OPENUDID_TEST_SEED"].flatMap { UInt64($0) }
            ?? UInt64.random(in: 0...UInt64.max)
        print("\(test): seed \(seed) (replay with OPENUDID_TEST_SEED=\(seed))")
        return SeededRandom(seed: seed)
    }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
