// swift-tools-version:6.0
import PackageDescription

// How libopenudid.so is linked: the Swift runtime and FoundationEssentials
// (not Foundation, nor its ICU data) from their static archives, every symbol
// resolved at link time, a SONAME, and exports.map. Three choices keep what a C
// host pays for it small (docs/BENCHMARKS.md, footprint.c-host.gain):
// - the toolchain's lld packs the relative relocations (DT_RELR, glibc 2.36
//   and later), which saves a host 1.7 MiB of relocation table read at load;
// - link/ comes first on the library path: its libstdc++.so is a linker script
//   that takes the C++ runtime the Swift runtime needs from libstdc++.a;
// - link/order.txt (scripts/order-libopenudid) lists the functions a host
//   runs, which lld places side by side at the front of the code.
let libopenudidLink = "\(Context.packageDirectory)/Sources/libopenudid/link"
let libopenudidLinkerFlags = [
    "-L", libopenudidLink,
    "-static-stdlib", "-use-ld=lld", "-Xlinker", "-z", "-Xlinker", "pack-relative-relocs",
    "-lFoundationEssentials", "-l_FoundationCollections", "-l_FoundationCShims", "-lswiftSynchronization",
    "-Xlinker", "--symbol-ordering-file=\(libopenudidLink)/order.txt", "-Xlinker", "--no-warn-symbol-ordering",
    "-Xlinker", "-soname=libopenudid.so.1",
    "-Xlinker", "-z", "-Xlinker", "defs",
    "-Xlinker", "--version-script=\(Context.packageDirectory)/Sources/libopenudid/exports.map"
]

let package = Package(
    name: "OpenUDID",
    products: [
        .library(name: "XSelection", targets: ["XSelection"]),
        .library(name: "OpenUDID", targets: ["OpenUDIDKit"]),
        .executable(name: "openudid", targets: ["openudid"]),
        .executable(name: "openudid-lab", targets: ["openudid-lab"]),
        .executable(name: "openudid-bench", targets: ["openudid-bench"]),
        // The C library, libopenudid.so.1 once installed (scripts/install).
        .library(name: "libopenudid", type: .dynamic, targets: ["libopenudid"])
    ],
    targets: [
        // C boundaries: module maps and shim headers, nothing else.
        // Two modules: CX11 (libxcb and its XFixes, for XSelection) and CXlib
        // (libX11, for the example text window and the raw test client). Only
        // libxcb's flags come from pkg-config, so that what links XSelection
        // alone (libopenudid) does not link libX11.
        .systemLibrary(
            name: "CX11",
            pkgConfig: "xcb xcb-xfixes xau",
            providers: [.apt(["libxcb1-dev", "libxcb-xfixes0-dev", "libxau-dev", "libx11-dev", "libxfixes-dev", "libx11-xcb-dev"])]
        ),
        // The few GLib, GIO and libsecret types and constants OpenUDIDKit uses,
        // declared in the project's own shim.h, and nothing to link: OpenUDIDKit
        // loads libsecret with dlopen when the Secret Service mirror is first used,
        // so neither their headers nor their libraries are needed to build.
        .target(name: "CLibSecret"),

        // Where outside input enters: the one funnel for file-system calls, and
        // the gates every byte from files and servers passes before it is used.
        .target(name: "InputGate"),

        // General ICCCM selections: owner, reader, watcher.
        .target(name: "XSelection", dependencies: ["CX11", "InputGate"]),

        // The identifier: records, sources, resolution, API.
        .target(name: "OpenUDIDKit", dependencies: ["XSelection", "InputGate", "CLibSecret"]),

        // The one argument parser of every program here: options as data, generated help.
        .target(name: "CommandLineKit", dependencies: ["COpenUDID"]),
        // The C interface: the hand-written include/openudid.h as a module, and
        // the Swift that implements it (`@c @implementation`, checked against
        // the header). The library carries the Swift runtime inside (static
        // stdlib and Foundation), is named libopenudid.so.1, and exports the
        // header's functions alone.
        .systemLibrary(name: "COpenUDID"),
        .target(
            name: "libopenudid",
            dependencies: ["OpenUDIDKit", "XSelection", "COpenUDID"],
            exclude: ["exports.map", "link"],
            linkerSettings: [.unsafeFlags(libopenudidLinkerFlags)]
        ),

        // The command-line tool.
        .executableTarget(name: "openudid", dependencies: ["OpenUDIDKit", "XSelection", "CommandLineKit"]),

        // The private desktop the lab, the benchmark and the tests run apps in:
        // child processes, Xvfb, a session bus and keyring, homes, tool lookup.
        .target(name: "DesktopSandbox"),

        // The experiment: real processes, every mechanism side by side; and the
        // population, which simulates up to millions of users. Optimised in debug
        // builds too, so that scripts/lab (a debug build) runs the population in
        // seconds rather than minutes.
        .executableTarget(
            name: "openudid-lab", dependencies: ["OpenUDIDKit", "DesktopSandbox", "CommandLineKit"],
            swiftSettings: [.unsafeFlags(["-O"], .when(configuration: .debug))]),

        // The benchmark: figures side by side with their baselines.
        .executableTarget(name: "openudid-bench", dependencies: ["OpenUDIDKit", "XSelection", "DesktopSandbox", "CommandLineKit"]),

        // A small window of text lines for the example apps; not part of the libraries.
        .target(name: "XTextWindow", dependencies: ["XSelection", "CX11"], path: "Examples/XTextWindow"),

        // Cooperating example desktop apps: two of one vendor, one of another.
        .target(
            name: "ExampleKit", dependencies: ["OpenUDIDKit", "XSelection", "XTextWindow", "CommandLineKit"],
            path: "Examples/ExampleKit"),
        .executableTarget(name: "acme-notes", dependencies: ["ExampleKit"], path: "Examples/AcmeNotes"),
        .executableTarget(name: "acme-photos", dependencies: ["ExampleKit"], path: "Examples/AcmePhotos"),
        .executableTarget(name: "indie-chess", dependencies: ["ExampleKit"], path: "Examples/IndieChess"),

        // Owns selections in a separate process for the tests: honestly through
        // XSelection, or as a deliberately broken raw X client.
        .executableTarget(
            name: "xselection-helper", dependencies: ["XSelection", "CX11", "CommandLineKit"],
            path: "Tests/Helpers/xselection-helper"),

        // Test harness: private Xvfb, private session bus and keyring, child processes.
        .target(name: "TestSupport", dependencies: ["DesktopSandbox"], path: "Tests/TestSupport"),
        .testTarget(name: "CommandLineKitTests", dependencies: ["CommandLineKit"]),
        .testTarget(
            name: "XSelectionTests",
            dependencies: ["XSelection", "XTextWindow", "TestSupport", "xselection-helper"]
        ),
        .testTarget(
            // libopenudid as C, C++, Python and GTK programs use it: installed
            // into a temporary prefix, compiled against, run beside Swift apps.
            name: "CInterfaceTests",
            dependencies: ["TestSupport", "openudid", "acme-notes", "indie-chess"],
            exclude: ["Programs"]
        ),
        .testTarget(
            name: "OpenUDIDTests",
            dependencies: ["OpenUDIDKit", "InputGate", "TestSupport", "openudid", "xselection-helper"]
        ),
        // A client of the public API alone: it declares types named like the
        // library's, and holds the README's example, so both must compile.
        .testTarget(
            name: "APIClientTests",
            dependencies: ["OpenUDIDKit"]
        )
    ],
    swiftLanguageModes: [.v6]
)
