import Foundation
import TestSupport
import Testing

/// bindings/python is a standard Python project: `python -m build` makes an
/// sdist and a wheel with setuptools from PyPI, both carrying the Apache-2.0
/// license, and `pip install -e` works in a fresh virtual environment.
@Suite struct PythonPackagingTests {
    @Test func theSdistAndTheWheelCarryTheApacheLicense() throws {
        let package = try PythonPackage.shared.get()
        let result = try PythonPackage.run(
            package.python,
            [
                "-c",
                """
                import sys, tarfile, zipfile
                wheel = zipfile.ZipFile(sys.argv[1])
                names = wheel.namelist()
                info = next(n for n in names if n.endswith(".dist-info/METADATA")).rsplit("/", 1)[0]
                print("wheel license", wheel.read(info + "/licenses/LICENSE") == open(sys.argv[3], "rb").read())
                metadata = wheel.read(info + "/METADATA").decode()
                print("wheel", [line for line in metadata.splitlines() if line.startswith(("License-Expression", "License-File"))])
                print("wheel modules", sorted(n for n in names if n.startswith("openudid/")))
                sdist = tarfile.open(sys.argv[2])
                root = sdist.getnames()[0].split("/")[0]
                print("sdist license", sdist.extractfile(root + "/LICENSE").read() == open(sys.argv[3], "rb").read())
                print("sdist", [line for line in sdist.extractfile(root + "/PKG-INFO").read().decode().splitlines()
                                if line.startswith("License-Expression")])
                """,
                try package.wheel().path, try package.sdist().path, Installation.packageRoot.appendingPathComponent("LICENSE").path
            ])
        #expect(
            result.standardOutput == """
                wheel license True
                wheel ['License-Expression: Apache-2.0', 'License-File: LICENSE']
                wheel modules ['openudid/__init__.py', 'openudid/_constants.py']
                sdist license True
                sdist ['License-Expression: Apache-2.0']

                """)
        // The copy beside pyproject.toml is the project's license, word for word.
        #expect(
            FileManager.default.contentsEqual(
                atPath: Installation.packageRoot.appendingPathComponent("bindings/python/LICENSE").path,
                andPath: Installation.packageRoot.appendingPathComponent("LICENSE").path))
    }

    @Test func anEditableInstallInAFreshEnvironmentRunsTheSourceItself() throws {
        let installation = try Installation.shared.get()
        let root = installation.binaries.deletingLastPathComponent().appendingPathComponent("python-editable")
        try? FileManager.default.removeItem(at: root)
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        let source = root.appendingPathComponent("source")
        let environment = root.appendingPathComponent("venv")
        try PythonPackage.copySource(to: source)
        try PythonPackage.makeEnvironment(at: environment)
        let python = environment.appendingPathComponent("bin/python")
        try PythonPackage.run(python, ["-m", "pip", "install", "--quiet", "-e", source.path], timeout: 300)

        // A change to the source shows without installing again.
        let module = source.appendingPathComponent("openudid/__init__.py")
        try (try String(contentsOf: module, encoding: .utf8) + "\nEDITED_IN_PLACE = True\n").write(
            to: module, atomically: true, encoding: .utf8)
        var runEnvironment = installation.environment()
        runEnvironment["PYTHONDONTWRITEBYTECODE"] = "1"
        let result = try runCommand(
            python, ["-c", "import openudid; print(openudid.EDITED_IN_PLACE, openudid.library_version() == openudid.VERSION)"],
            environment: runEnvironment)
        #expect(result.status == 0, "\(result.standardError)")
        #expect(result.standardOutput == "True True\n")
    }
}
