import Testing

@testable import OpenUDIDKit

/// The SHA-256 and HMAC-SHA256 behind the app-scoped identifier, against FIPS 180-4
/// and RFC 4231 vectors and lengths around the padding boundaries (expected values
/// from Python's hashlib and hmac).
@Suite struct SHA256Tests {
    private static func hex(_ bytes: [UInt8]) -> String {
        bytes.map { $0 < 16 ? "0" + String($0, radix: 16) : String($0, radix: 16) }.joined()
    }

    @Test(arguments: [
        ("", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"),
        ("abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"),
        (
            "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"
        ),
        (
            "abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqklmnopqrlmnopqrsmnopqrstnopqrstu",
            "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1"
        )
    ])
    func hashesTheFIPSVectors(message: String, expected: String) {
        #expect(Self.hex(SHA256.hash(Array(message.utf8))) == expected)
    }

    /// Messages of 0, 1, 2, ... bytes: lengths where the padding fits in the last block, and where it does not.
    @Test(arguments: [
        (55, "463eb28e72f82e0a96c0a4cc53690c571281131f672aa229e0d45ae59b598b59"),
        (56, "da2ae4d6b36748f2a318f23e7ab1dfdf45acdc9d049bd80e59de82a60895f562"),
        (63, "29af2686fd53374a36b0846694cc342177e428d1647515f078784d69cdb9e488"),
        (64, "fdeab9acf3710362bd2658cdc9a29e8f9c757fcf9811603a8c447cd1d9151108"),
        (65, "4bfd2c8b6f1eec7a2afeb48b934ee4b2694182027e6d0fc075074f2fabb31781"),
        (119, "da18797ed7c3a777f0847f429724a2d8cd5138e6ed2895c3fa1a6d39d18f7ec6"),
        (120, "f52b23db1fbb6ded89ef42a23ce0c8922c45f25c50b568a93bf1c075420bbb7c")
    ])
    func hashesEveryLengthAroundTheBlockBoundary(length: Int, expected: String) {
        #expect(Self.hex(SHA256.hash((0..<length).map { UInt8($0) })) == expected)
    }

    @Test(arguments: [
        // RFC 4231 test cases 1, 2 and 6 (a key longer than the block is hashed first).
        ([UInt8](repeating: 0x0b, count: 20), "Hi There", "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7"),
        (Array("Jefe".utf8), "what do ya want for nothing?", "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"),
        (
            [UInt8](repeating: 0xaa, count: 131), "Test Using Larger Than Block-Size Key - Hash Key First",
            "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54"
        ),
        // An empty key, and a key of exactly one block.
        ([], "", "b613679a0814d9ec772f95d778c35fc5ff1697c493715653c6c712144292c5ad"),
        ((0..<64).map { UInt8($0) }, "x", "b8dc75d4220cfd86a5bf7c4301b3698f142a66fd7c004627df558626edb480cd")
    ])
    func authenticatesTheRFC4231Vectors(key: [UInt8], message: String, expected: String) {
        #expect(Self.hex(SHA256.hmac(key: key, message: Array(message.utf8))) == expected)
    }
}
