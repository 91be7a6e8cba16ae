import OpenUDIDKit
import Testing

@Suite struct StoragePathsTests {
    @Test func usesXDGDirectoriesWhenSetAndAbsolute() throws {
        let paths = try StoragePaths(environment: ["HOME": "/home/u", "XDG_DATA_HOME": "/d/", "XDG_CONFIG_HOME": "/c"])
        #expect(paths.dataHome == "/d")
        #expect(paths.configHome == "/c")
        #expect(paths.slotsDirectory == "/d/openudid/slots")
        #expect(paths.vendorsDirectory == "/d/openudid/vendors")
        #expect(paths.localCacheFile(for: try AppIdentity("com.acme.notes")) == "/d/com.acme.notes/openudid.json")
        #expect(paths.optOutMarker == "/c/openudid/opt-out")
    }

    @Test(arguments: [
        [:],
        ["XDG_DATA_HOME": "", "XDG_CONFIG_HOME": ""],
        ["XDG_DATA_HOME": "relative/data", "XDG_CONFIG_HOME": "~/.config"]
    ])
    func fallsBackToHomeWhenXDGIsUnsetEmptyOrRelative(xdg: [String: String]) throws {
        let paths = try StoragePaths(environment: xdg.merging(["HOME": "/home/u/"]) { a, _ in a })
        #expect(paths.dataHome == "/home/u/.local/share")
        #expect(paths.configHome == "/home/u/.config")
    }

    @Test func needsNoHomeWhenBothXDGDirectoriesAreSet() throws {
        let paths = try StoragePaths(environment: ["XDG_DATA_HOME": "/d", "XDG_CONFIG_HOME": "/c"])
        #expect(paths.dataHome == "/d")
    }

    @Test func refusesAMissingOrRelativeHome() {
        #expect(throws: StoragePathsError(.noHome)) { try StoragePaths(environment: [:]) }
        #expect(throws: StoragePathsError(.noHome)) { try StoragePaths(environment: ["XDG_DATA_HOME": "/d"]) }
        #expect(throws: StoragePathsError(.relativeHome("home/u"))) { try StoragePaths(environment: ["HOME": "home/u"]) }
    }

    @Test func aNamespaceSeparatesSharedFilesAndTheCacheButNotTheOptOut() throws {
        let paths = try StoragePaths(environment: ["HOME": "/h"], namespace: "lab-1")
        #expect(paths.slotsDirectory == "/h/.local/share/openudid/ns/lab-1/slots")
        #expect(paths.vendorsDirectory == "/h/.local/share/openudid/ns/lab-1/vendors")
        #expect(paths.localCacheFile(for: try AppIdentity("com.acme.notes")) == "/h/.local/share/com.acme.notes/openudid-lab-1.json")
        #expect(paths.optOutMarker == "/h/.config/openudid/opt-out")
    }

    @Test(arguments: ["", "-x", "a/b", "..", "a.b", "x y", String(repeating: "n", count: 65), "né"])
    func refusesNamespacesThatCouldEscapeOrConfuse(namespace: String) {
        #expect(throws: StoragePathsError(.invalidNamespace(namespace))) {
            try StoragePaths(environment: ["HOME": "/h"], namespace: namespace)
        }
    }

    @Test func homeAtTheRootDoesNotDoubleSlashes() throws {
        let paths = try StoragePaths(environment: ["HOME": "/"])
        #expect(paths.dataHome == "/.local/share")
    }
}
