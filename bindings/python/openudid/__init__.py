"""The identifier the cooperating desktop apps of a user session share.

A binding to libopenudid (the C library; see include/openudid.h) through
ctypes, with nothing beyond the standard library::

    import openudid

    udid = openudid.OpenUDID("org.example.app")
    udid.value()        # 40 hex digits, shared by every participating app
    udid.app_value()    # a UUID for this app alone
    udid.report()       # the identifier with its provenance, a dict
    udid.participate(lambda id: print("now", id))   # on a library thread

Everything the C interface does is here: values and reports, participation
(waiting for the first resolution or not), opting out per app and for the
user, consent, resetting, removing one app's data and forgetting everything.

The library is found, in this order, at the path in $OPENUDID_LIBRARY, as
libopenudid.so.1 on the loader's path (scripts/install puts it there), and
in the libdir pkg-config gives for openudid.

Every failure of the library raises `openudid.Error`, which carries the
library's code (negative: `openudid.EAPP`...) and its message. A wrong Python
argument is refused before the library is called, so it changes nothing:
`TypeError` for a wrong type (a callback that is not callable, an app id that
is not a str, a flag that is not True or False), `ValueError` for a wrong
value (a mirror or policy the library does not know, a string with a NUL
character in it, which C would cut short).

The constants (error codes, sizes, enum values) come from include/openudid.h
through `_constants.py`, which generate_constants.py writes from the header.
"""

import ctypes
import ctypes.util
import itertools
import json
import os
import re
import subprocess
import threading

from ._constants import (  # noqa: F401 (re-exported)
    ABI_VERSION, APP_VALUE_SIZE, EAPP, EBUSY, EDISPLAY, EINVAL, ENAMESPACE, ENOHOME, ENOMEM, ERANGE, ERROR_NAMES,
    ESTORE, FORGET_DRY_RUN, MIRROR_AUTOMATIC, MIRROR_FILE, MIRROR_NONE, MIRROR_SECRET_SERVICE, OK,
    POLICY_FOLLOW_CONSENSUS, POLICY_KEEP_LOCAL, VALUE_SIZE, VERSION, VERSION_MAJOR, VERSION_MINOR, VERSION_PATCH,
)

__all__ = [
    "OpenUDID", "Error", "remove_app", "opt_out_everywhere", "opt_in_everywhere",
    "is_opted_out_everywhere", "reset_everywhere", "forget_everything", "library_version",
    "MIRROR_AUTOMATIC", "MIRROR_SECRET_SERVICE", "MIRROR_FILE", "MIRROR_NONE",
    "POLICY_FOLLOW_CONSENSUS", "POLICY_KEEP_LOCAL",
    "OK", "EINVAL", "EAPP", "ENAMESPACE", "ENOHOME", "ESTORE", "EDISPLAY", "ERANGE", "EBUSY", "ENOMEM",
]

# The version of this package: the version of the header it was made from.
__version__ = VERSION

_MIRRORS = {"automatic": MIRROR_AUTOMATIC, "secret-service": MIRROR_SECRET_SERVICE, "file": MIRROR_FILE, "none": MIRROR_NONE}
_POLICIES = {"follow": POLICY_FOLLOW_CONSENSUS, "keep": POLICY_KEEP_LOCAL}

_ON_CHANGE = ctypes.CFUNCTYPE(None, ctypes.c_char_p, ctypes.c_void_p)
_DESTROY = ctypes.CFUNCTYPE(None, ctypes.c_void_p)

# The callbacks the library may still call, by the context number it was
# given for each; the library's destroy function drops one once its
# participation has ended, so none is freed while the library can call it.
_callbacks = {}
_callbacks_lock = threading.Lock()
_context_numbers = itertools.count(1)


@_DESTROY
def _release(context):
    with _callbacks_lock:
        _callbacks.pop(context, None)


class Error(Exception):
    """A call into libopenudid failed.

    `code` is the library's error code (negative, one of the E... constants
    of this module); `message`, which is also what `str()` gives, says what
    went wrong and what to do.
    """

    def __init__(self, code, message):
        super().__init__(message)
        self.code = code
        self.message = message
        # What openudid_forget_everything listed when it failed (forget_everything).
        self.listing = None

    @property
    def name(self):
        """The code's name in openudid.h, such as "OPENUDID_EAPP"."""
        return ERROR_NAMES.get(self.code, f"unknown error {self.code}")

    def __str__(self):
        return self.message


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
        "openudid_options_set_consent_required": (c_int, [c_void_p, c_int]),
        "openudid_open_with": (c_int, [c_char_p, c_char_p, c_void_p, handle_out]),
        "openudid_close": (None, [c_void_p]),
        "openudid_value_n": (c_int, [c_void_p, c_char_p, c_size_t]),
        "openudid_app_value_n": (c_int, [c_void_p, c_char_p, c_size_t]),
        "openudid_refresh": (c_int, [c_void_p]),
        # A c_void_p result, not c_char_p: the string must be freed by the library.
        "openudid_report_json": (c_void_p, [c_void_p]),
        "openudid_participate_full": (c_int, [c_void_p, _ON_CHANGE, c_void_p, _DESTROY]),
        "openudid_participate_async_full": (c_int, [c_void_p, _ON_CHANGE, c_void_p, _DESTROY]),
        "openudid_opt_out": (c_int, [c_void_p]),
        "openudid_opt_in": (c_int, [c_void_p]),
        "openudid_grant_consent": (c_int, [c_void_p]),
        "openudid_withdraw_consent": (c_int, [c_void_p]),
        "openudid_has_consent": (c_int, [c_void_p]),
        "openudid_opt_out_everywhere": (c_int, []),
        "openudid_opt_in_everywhere": (c_int, []),
        "openudid_is_opted_out_everywhere": (c_int, []),
        "openudid_reset_everywhere": (c_int, [c_char_p, ctypes.POINTER(ctypes.c_int64)]),
        # A c_void_p out-parameter, not c_char_p: the string must be freed by the library.
        "openudid_forget_everything": (c_int, [ctypes.c_uint, ctypes.POINTER(c_void_p)]),
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


# The C function a message of the library begins with ("openudid_open_with: "):
# a Python caller called no such thing.
_C_FUNCTION = re.compile(r"^openudid_[a-z_]+: ")


def _check(code):
    if code < OK:
        message = _library().openudid_last_error().decode("utf-8", "replace")
        raise Error(code, _C_FUNCTION.sub("", message))
    return code


def _text(value, name):
    """`value` as the NUL-terminated UTF-8 bytes C takes; None stays None."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a str, not {type(value).__name__}")
    if "\0" in value:
        raise ValueError(
            f"{name} {value!r} contains a NUL character (at index {value.index(chr(0))}); "
            "C would read it only up to there, so it is refused")
    return value.encode("utf-8")


def _flag(value, name):
    if not isinstance(value, bool):
        raise TypeError(f"{name} must be True or False, not {value!r}")
    return 1 if value else 0


def _choice(value, name, choices):
    """The library's number for `value`, one of the names in `choices`."""
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a str, one of {', '.join(map(repr, choices))}; not {value!r}")
    if value not in choices:
        raise ValueError(f"{name} must be one of {', '.join(map(repr, choices))}, not {value!r}")
    return choices[value]


def _taken(pointer):
    """The text of a string the library returned for the caller to free, freed."""
    try:
        return ctypes.string_at(pointer).decode("utf-8")
    finally:
        _library().openudid_free(pointer)


class OpenUDID:
    """One app's handle on the shared identifier.

    :param app: a reverse-DNS application id such as ``org.example.app``.
    :param vendor: the vendor whose mirror the app shares; by default the
        id's first two parts, or three under a hosting prefix such as
        ``io.github.`` (``io.github.alice`` for ``io.github.alice.App``;
        docs/PROTOCOL.md, section 1, lists the prefixes).
    :param display: the X display (default: ``$DISPLAY``).
    :param selections: whether to use the X display at all.
    :param namespace: a namespace of the app's own, for tests and experiments.
    :param mirror: ``"automatic"`` (default), ``"secret-service"``, ``"file"`` or ``"none"``.
    :param policy: ``"follow"`` the consensus (default) or ``"keep"`` the app's own value.
    :param consent_required: take part only once the user consented
        (`grant_consent()`); until then the value is 40 zeros.
    :raises TypeError: for an argument of the wrong type (an app id that is
        not a str, a flag that is not True or False).
    :raises ValueError: for a string with a NUL character, or a `mirror` or
        `policy` not among those above.
    :raises Error: for an invalid app id, vendor or namespace (EAPP,
        ENAMESPACE), or EDISPLAY for a `display` that does not open.

    Usable as a context manager; `close()` ends the participation.
    """

    def __init__(self, app, vendor=None, *, display=None, selections=True, namespace=None, mirror="automatic",
                 policy="follow", consent_required=False):
        self._handle = None
        # Every argument is checked before the library is called.
        app_bytes = _app(app)
        vendor_bytes, display_bytes, namespace_bytes = (
            _text(vendor, "vendor"), _text(display, "display"), _text(namespace, "namespace"))
        selections_flag, consent_flag = _flag(selections, "selections"), _flag(consent_required, "consent_required")
        mirror_number, policy_number = _choice(mirror, "mirror", _MIRRORS), _choice(policy, "policy", _POLICIES)
        library = _library()
        options = ctypes.c_void_p()
        _check(library.openudid_options_new(ctypes.byref(options)))
        try:
            _check(library.openudid_options_set_display(options, display_bytes))
            _check(library.openudid_options_set_selections(options, selections_flag))
            _check(library.openudid_options_set_namespace(options, namespace_bytes))
            _check(library.openudid_options_set_mirror(options, mirror_number))
            _check(library.openudid_options_set_policy(options, policy_number))
            _check(library.openudid_options_set_consent_required(options, consent_flag))
            handle = ctypes.c_void_p()
            _check(library.openudid_open_with(app_bytes, vendor_bytes, options, ctypes.byref(handle)))
            self._handle = handle
        finally:
            library.openudid_options_free(options)
        self.app = app

    def _open_handle(self):
        if self._handle is None:
            raise Error(EINVAL, f"the OpenUDID of {self.app} is closed; make a new one")
        return self._handle

    def value(self, refresh=False):
        """The identifier every participating app shares: 40 lowercase hex
        digits, 40 zeros when opted out. Resolved on first use, then cached
        (kept up to date while participating); `refresh` resolves again.

        :raises TypeError: when `refresh` is not True or False.
        """
        if _flag(refresh, "refresh"):
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
        pointer = _library().openudid_report_json(self._open_handle())
        if not pointer:
            _check(EINVAL)
        return json.loads(_taken(pointer))

    def participate(self, callback=None):
        """Takes part in the session until `close()`: serves this app's record
        in a selection slot and follows the others. Returns once the first
        resolution is served.

        `callback(id)` is called with each new identifier, starting with the
        first, on a thread of the library's: hand the value to your own loop
        (for example with ``GLib.idle_add`` or a ``queue.Queue``).

        :raises TypeError: when `callback` is neither None nor callable.
        :raises Error: with code EBUSY when already participating.
        """
        self._participate(callback, _library().openudid_participate_full)

    def participate_async(self, callback=None):
        """Like `participate()`, but returns at once: the first resolution
        (which may wait seconds for a slow keyring) runs on a thread of the
        library's, and `callback` hears the first identifier when it is done.
        The form for a GUI main loop.

        :raises TypeError: when `callback` is neither None nor callable.
        :raises Error: with code EBUSY when already participating.
        """
        self._participate(callback, _library().openudid_participate_async_full)

    def _participate(self, callback, start):
        if callback is not None and not callable(callback):
            raise TypeError(f"callback must be callable (it is called with each identifier), not {callback!r}")
        handle = self._open_handle()
        if callback is None:
            function = _ON_CHANGE()
        else:
            def on_change(identifier, _context):
                callback(identifier.decode())
            function = _ON_CHANGE(on_change)
        context = next(_context_numbers)
        with _callbacks_lock:
            _callbacks[context] = function
        try:
            _check(start(handle, function, context, _release))
        except Error as error:
            # On failure the library keeps nothing and calls no destroy function.
            with _callbacks_lock:
                _callbacks.pop(context, None)
            if error.code == EBUSY:
                raise Error(EBUSY, f"{self.app} already participates through this OpenUDID; one participation "
                                   "each (close() ends it)") from None
            raise

    def opt_out(self):
        """Opts this app out (40 zeros) until `opt_in()`; lasts across restarts."""
        _check(_library().openudid_opt_out(self._open_handle()))

    def opt_in(self):
        """Undoes `opt_out()`."""
        _check(_library().openudid_opt_in(self._open_handle()))

    def grant_consent(self):
        """Records the user's consent for this app (kept until withdrawn); a
        participating handle takes part at once."""
        _check(_library().openudid_grant_consent(self._open_handle()))

    def withdraw_consent(self):
        """Withdraws the user's consent and erases this app's file slot and
        local cache; a participating handle gives up its slot at once."""
        _check(_library().openudid_withdraw_consent(self._open_handle()))

    def has_consent(self):
        """Whether the user's consent for this app is recorded."""
        return _check(_library().openudid_has_consent(self._open_handle())) == 1

    def close(self):
        """Ends the participation (the selection slot is released at once) and
        frees the handle. No callback runs once this returns, unless it is
        called from the callback itself. Closing twice is fine."""
        if self._handle is not None:
            _library().openudid_close(self._handle)
            self._handle = None

    def __enter__(self):
        return self

    def __exit__(self, *exception):
        self.close()

    def __del__(self):
        if getattr(self, "_handle", None) is not None and _loaded is not None:
            self.close()


def _app(app):
    """`app` as C takes it; an app id is required."""
    if app is None:
        raise TypeError("app must be a str such as 'org.example.app', not None")
    return _text(app, "app")


def remove_app(app, namespace=None):
    """Deletes what uninstalling `app` with its data would: its file slot and
    its local cache (not its vendor's mirror)."""
    _check(_library().openudid_remove_app_in(_app(app), _text(namespace, "namespace")))


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
    generation = ctypes.c_int64(0)
    _check(_library().openudid_reset_everywhere(_text(namespace, "namespace"), ctypes.byref(generation)))
    return generation.value


def forget_everything(dry_run=False):
    """Removes everything the library wrote for the user, in every namespace
    (`openudid forget --all`); stop the participating apps first. With
    `dry_run` it removes nothing and says what it would remove.

    Returns a dict: "dryRun", "files" (paths), "keyringItems" (labels) and
    "problems". Raises `Error` (ESTORE) when something could not be removed;
    its `listing` attribute then holds the dict.
    """
    flags = FORGET_DRY_RUN if _flag(dry_run, "dry_run") else 0
    pointer = ctypes.c_void_p()
    code = _library().openudid_forget_everything(flags, ctypes.byref(pointer))
    listing = json.loads(_taken(pointer.value)) if pointer.value else None
    try:
        _check(code)
    except Error as error:
        error.listing = listing
        raise
    return listing


def library_version():
    """The loaded library's version, such as "1.2.3" (`VERSION` is the
    version of the header this package was made from; the two are the same
    when the package and the library come from one release)."""
    return _library().openudid_version().decode()
