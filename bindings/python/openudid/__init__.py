"""The identifier the cooperating desktop apps of a user session share.

A binding to libopenudid (the C library; see include/openudid.h) through
ctypes, with nothing beyond the standard library::

    import openudid

    udid = openudid.OpenUDID("org.example.app")
    udid.value()        # 40 hex digits, shared by every participating app
    udid.app_value()    # a UUID for this app alone
    udid.report()       # the identifier with its provenance, a dict
    udid.participate(lambda id: print("now", id))

The library is found, in this order, at the path in $OPENUDID_LIBRARY, as
libopenudid.so.1 on the loader's path (scripts/install puts it there), and
in the libdir pkg-config gives for openudid.

Every failure raises `openudid.Error`, which carries the library's code
(`OPENUDID_E...`, negative) and its message.
"""

import ctypes
import ctypes.util
import json
import os
import subprocess
import threading

__all__ = [
    "OpenUDID", "Error", "remove_app", "opt_out_everywhere", "opt_in_everywhere",
    "is_opted_out_everywhere", "reset_everywhere", "library_version",
    "MIRROR_AUTOMATIC", "MIRROR_SECRET_SERVICE", "MIRROR_FILE", "MIRROR_NONE",
    "POLICY_FOLLOW_CONSENSUS", "POLICY_KEEP_LOCAL",
]

# The constants of openudid.h.
OK = 0
EINVAL, EAPP, ENAMESPACE, ENOHOME, ESTORE, EDISPLAY, ERANGE, EBUSY, ENOMEM = range(-1, -10, -1)
VALUE_SIZE = 41
APP_VALUE_SIZE = 37
MIRROR_AUTOMATIC, MIRROR_SECRET_SERVICE, MIRROR_FILE, MIRROR_NONE = range(4)
POLICY_FOLLOW_CONSENSUS, POLICY_KEEP_LOCAL = range(2)

_MIRRORS = {"automatic": MIRROR_AUTOMATIC, "secret-service": MIRROR_SECRET_SERVICE, "file": MIRROR_FILE, "none": MIRROR_NONE}
_POLICIES = {"follow": POLICY_FOLLOW_CONSENSUS, "keep": POLICY_KEEP_LOCAL}

_ON_CHANGE = ctypes.CFUNCTYPE(None, ctypes.c_char_p, ctypes.c_void_p)


class Error(Exception):
    """A call into libopenudid failed.

    `code` is the library's error code (negative, one of the E... constants
    of this module); `message` says what went wrong and what to do.
    """

    def __init__(self, code, message):
        super().__init__(message)
        self.code = code
        self.message = message

    def __str__(self):
        return f"{self.message} ({_library().openudid_strerror(self.code).decode()})"


_loaded = None
_loading = threading.Lock()


def _candidates():
    explicit = os.environ.get("OPENUDID_LIBRARY")
    if explicit:
        yield explicit
        return
    yield "libopenudid.so.1"
    found = ctypes.util.find_library("openudid")
    if found:
        yield found
    try:
        libdir = subprocess.run(["pkg-config", "--variable=libdir", "openudid"], capture_output=True, text=True,
                                check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        libdir = ""
    if libdir:
        yield os.path.join(libdir, "libopenudid.so.1")


def _declare(library):
    c_int, c_char_p, c_void_p, c_size_t = ctypes.c_int, ctypes.c_char_p, ctypes.c_void_p, ctypes.c_size_t
    handle_out = ctypes.POINTER(c_void_p)
    signatures = {
        "openudid_strerror": (c_char_p, [c_int]),
        "openudid_last_error": (c_char_p, []),
        "openudid_version": (c_char_p, []),
        "openudid_options_new": (c_int, [handle_out]),
        "openudid_options_free": (None, [c_void_p]),
        "openudid_options_set_display": (c_int, [c_void_p, c_char_p]),
        "openudid_options_set_selections": (c_int, [c_void_p, c_int]),
        "openudid_options_set_namespace": (c_int, [c_void_p, c_char_p]),
        "openudid_options_set_mirror": (c_int, [c_void_p, c_int]),
        "openudid_options_set_policy": (c_int, [c_void_p, c_int]),
        "openudid_open_with": (c_int, [c_char_p, c_char_p, c_void_p, handle_out]),
        "openudid_close": (None, [c_void_p]),
        "openudid_value_n": (c_int, [c_void_p, c_char_p, c_size_t]),
        "openudid_app_value_n": (c_int, [c_void_p, c_char_p, c_size_t]),
        "openudid_refresh": (c_int, [c_void_p]),
        # A c_void_p result, not c_char_p: the string must be freed by the library.
        "openudid_report_json": (c_void_p, [c_void_p]),
        "openudid_participate": (c_int, [c_void_p, _ON_CHANGE, c_void_p]),
        "openudid_opt_out": (c_int, [c_void_p]),
        "openudid_opt_in": (c_int, [c_void_p]),
        "openudid_opt_out_everywhere": (c_int, []),
        "openudid_opt_in_everywhere": (c_int, []),
        "openudid_is_opted_out_everywhere": (c_int, []),
        "openudid_reset_everywhere": (c_int, [c_char_p, ctypes.POINTER(ctypes.c_longlong)]),
        "openudid_remove_app_in": (c_int, [c_char_p, c_char_p]),
        "openudid_free": (None, [c_void_p]),
    }
    for name, (result, arguments) in signatures.items():
        function = getattr(library, name)
        function.restype = result
        function.argtypes = arguments
    return library


def _library():
    """The loaded library (loaded on first use)."""
    global _loaded
    with _loading:
        if _loaded is None:
            tried = []
            for candidate in _candidates():
                try:
                    # CDLL, not PyDLL: calls release the interpreter lock, so
                    # on_change (which takes it) can run while openudid_close waits.
                    _loaded = _declare(ctypes.CDLL(candidate))
                    break
                except OSError as error:
                    tried.append(f"{candidate}: {error}")
            else:
                raise OSError("cannot load libopenudid: " + "; ".join(tried)
                              + ". Install it with scripts/install, or set OPENUDID_LIBRARY to libopenudid.so.1's path")
        return _loaded


def _check(code):
    if code != OK:
        raise Error(code, _library().openudid_last_error().decode("utf-8", "replace"))


def _text(value, name):
    if value is None:
        return None
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a str, not {type(value).__name__}")
    return value.encode("utf-8")


class OpenUDID:
    """One app's handle on the shared identifier.

    :param app: a reverse-DNS application id such as ``org.example.app``.
    :param vendor: the vendor whose mirror the app shares; by default the
        id's first two parts.
    :param display: the X display (default: ``$DISPLAY``).
    :param selections: whether to use the X display at all.
    :param namespace: a namespace of the app's own, for tests and experiments.
    :param mirror: ``"automatic"`` (default), ``"secret-service"``, ``"file"`` or ``"none"``.
    :param policy: ``"follow"`` the consensus (default) or ``"keep"`` the app's own value.
    :raises Error: for an invalid app id, vendor, namespace or option.

    Usable as a context manager; `close()` ends the participation.
    """

    def __init__(self, app, vendor=None, *, display=None, selections=True, namespace=None, mirror="automatic",
                 policy="follow"):
        library = _library()
        self._handle = None
        self._callback = None
        if mirror not in _MIRRORS:
            raise Error(EINVAL, f"mirror must be one of {', '.join(_MIRRORS)}, not {mirror!r}")
        if policy not in _POLICIES:
            raise Error(EINVAL, f"policy must be one of {', '.join(_POLICIES)}, not {policy!r}")
        options = ctypes.c_void_p()
        _check(library.openudid_options_new(ctypes.byref(options)))
        try:
            _check(library.openudid_options_set_display(options, _text(display, "display")))
            _check(library.openudid_options_set_selections(options, 1 if selections else 0))
            _check(library.openudid_options_set_namespace(options, _text(namespace, "namespace")))
            _check(library.openudid_options_set_mirror(options, _MIRRORS[mirror]))
            _check(library.openudid_options_set_policy(options, _POLICIES[policy]))
            handle = ctypes.c_void_p()
            _check(library.openudid_open_with(_text(app, "app"), _text(vendor, "vendor"), options, ctypes.byref(handle)))
            self._handle = handle
        finally:
            library.openudid_options_free(options)
        self.app = app

    def _open_handle(self):
        if self._handle is None:
            raise Error(EINVAL, f"the handle for {self.app} is closed")
        return self._handle

    def value(self, refresh=False):
        """The identifier every participating app shares: 40 lowercase hex
        digits, 40 zeros when opted out. Resolved on first use, then cached
        (kept up to date while participating); `refresh` resolves again."""
        if refresh:
            _check(_library().openudid_refresh(self._open_handle()))
        buffer = ctypes.create_string_buffer(VALUE_SIZE)
        _check(_library().openudid_value_n(self._open_handle(), buffer, len(buffer)))
        return buffer.value.decode()

    def app_value(self):
        """The value derived for this app alone, a lowercase UUID; no other
        app can link it to its own. The nil UUID when opted out."""
        buffer = ctypes.create_string_buffer(APP_VALUE_SIZE)
        _check(_library().openudid_app_value_n(self._open_handle(), buffer, len(buffer)))
        return buffer.value.decode()

    def report(self):
        """The latest resolution with its provenance, as `openudid get --json`
        prints it: a dict with "id", "appScoped", "origin", "votes", "sources"..."""
        library = _library()
        pointer = library.openudid_report_json(self._open_handle())
        if not pointer:
            _check(EINVAL)
        try:
            return json.loads(ctypes.string_at(pointer).decode())
        finally:
            library.openudid_free(pointer)

    def participate(self, callback=None):
        """Takes part in the session until `close()`: serves this app's record
        in a selection slot and follows the others.

        `callback(id)` is called with each new identifier, starting with the
        first, on a thread of the library's: hand the value to your own loop
        (for example with ``GLib.idle_add`` or a ``queue.Queue``).

        :raises Error: with code EBUSY when already participating.
        """
        if callback is None:
            function = _ON_CHANGE()
        else:
            def on_change(identifier, _context):
                callback(identifier.decode())
            function = _ON_CHANGE(on_change)
        _check(_library().openudid_participate(self._open_handle(), function, None))
        # The library calls it until close(); it must live as long.
        self._callback = function

    def opt_out(self):
        """Opts this app out (40 zeros) until `opt_in()`; lasts across restarts."""
        _check(_library().openudid_opt_out(self._open_handle()))

    def opt_in(self):
        """Undoes `opt_out()`."""
        _check(_library().openudid_opt_in(self._open_handle()))

    def close(self):
        """Ends the participation (the selection slot is released) and frees
        the handle. No callback runs once this returns. Closing twice is fine."""
        if self._handle is not None:
            _library().openudid_close(self._handle)
            self._handle = None
            self._callback = None

    def __enter__(self):
        return self

    def __exit__(self, *exception):
        self.close()

    def __del__(self):
        if getattr(self, "_handle", None) is not None and _loaded is not None:
            self.close()


def remove_app(app, namespace=None):
    """Deletes what uninstalling `app` with its data would: its file slot and
    its local cache (not its vendor's mirror)."""
    _check(_library().openudid_remove_app_in(_text(app, "app"), _text(namespace, "namespace")))


def opt_out_everywhere():
    """Opts the user out for every participating app."""
    _check(_library().openudid_opt_out_everywhere())


def opt_in_everywhere():
    """Undoes `opt_out_everywhere()`."""
    _check(_library().openudid_opt_in_everywhere())


def is_opted_out_everywhere():
    """Whether the user opted out for every app."""
    return bool(_library().openudid_is_opted_out_everywhere())


def reset_everywhere(namespace=None):
    """Gives every participating app a new identifier, never the old one again:
    removes every copy of it and raises the reset generation, which it returns.
    Opt-outs and consent stay."""
    generation = ctypes.c_longlong(0)
    _check(_library().openudid_reset_everywhere(_text(namespace, "namespace"), ctypes.byref(generation)))
    return generation.value


def library_version():
    """The loaded library's version, such as "0.2.0"."""
    return _library().openudid_version().decode()
