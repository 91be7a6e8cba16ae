"""A PEP 517 build backend for this package, from the standard library alone.

It builds a pure-Python wheel of the `openudid` package (PEP 427) and
nothing else: enough for `pip install bindings/python` with nothing to fetch
from a package index. Name, version, description and the README come from
pyproject.toml.
"""
import base64
import hashlib
import os
import tomllib
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
PACKAGE = "openudid"


def _project():
    with open(os.path.join(HERE, "pyproject.toml"), "rb") as file:
        return tomllib.load(file)["project"]


def _metadata():
    project = _project()
    with open(os.path.join(HERE, project["readme"]), encoding="utf-8") as file:
        readme = file.read()
    lines = [
        "Metadata-Version: 2.1",
        f"Name: {project['name']}",
        f"Version: {project['version']}",
        f"Summary: {project['description']}",
        f"Requires-Python: {project['requires-python']}",
        f"License: {project['license']['text']}",
        "Description-Content-Type: text/markdown",
        "",
        readme,
    ]
    return "\n".join(lines)


def _dist_info():
    project = _project()
    return f"{project['name']}-{project['version']}.dist-info", f"{project['name']}-{project['version']}-py3-none-any.whl"


def get_requires_for_build_wheel(config_settings=None):
    return []


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    dist_info, _ = _dist_info()
    os.makedirs(os.path.join(metadata_directory, dist_info), exist_ok=True)
    with open(os.path.join(metadata_directory, dist_info, "METADATA"), "w", encoding="utf-8") as file:
        file.write(_metadata())
    return dist_info


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    dist_info, wheel_name = _dist_info()
    files = {}
    for root, _, names in os.walk(os.path.join(HERE, PACKAGE)):
        for name in sorted(names):
            if name.endswith(".py") or name == "py.typed":
                path = os.path.join(root, name)
                with open(path, "rb") as file:
                    files[os.path.relpath(path, HERE).replace(os.sep, "/")] = file.read()
    files[f"{dist_info}/METADATA"] = _metadata().encode()
    files[f"{dist_info}/WHEEL"] = b"Wheel-Version: 1.0\nGenerator: wheel_backend\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
    files[f"{dist_info}/top_level.txt"] = f"{PACKAGE}\n".encode()
    record = []
    for name, data in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.append(f"{name},sha256={digest},{len(data)}")
    record.append(f"{dist_info}/RECORD,,")
    files[f"{dist_info}/RECORD"] = ("\n".join(record) + "\n").encode()
    with zipfile.ZipFile(os.path.join(wheel_directory, wheel_name), "w", zipfile.ZIP_DEFLATED) as wheel:
        for name, data in files.items():
            wheel.writestr(name, data)
    return wheel_name
