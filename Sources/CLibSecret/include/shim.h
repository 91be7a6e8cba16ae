#ifndef OPENUDID_CLIBSECRET_SHIM_H
#define OPENUDID_CLIBSECRET_SHIM_H

/*
 * The types, enumerations and declarations of libsecret, GIO, GObject and GLib,
 * and nothing to link: the module names no library, and OpenUDIDKit resolves
 * the functions it calls with dlsym once the Secret Service mirror is first used
 * (VendorMirror/LibSecret.swift), so a process that never uses it never loads
 * them.
 *
 * The headers come through links beside this file into Debian's include
 * directories (glib-2.0 and libsecret-1), which this directory, the target's
 * public headers, puts on the search path; glibconfig.h finds GLib's
 * architecture-specific configuration. pkg-config is not used: SwiftPM would
 * pass its -l flags to every program that links OpenUDIDKit, and libsecret's
 * also passes -pthread (through gio), which SwiftPM refuses with a warning.
 */
#include <glib.h>
#include <glib-object.h>
#include <gio/gio.h>

/* libsecret's headers, as <libsecret/secret.h> includes them. */
#ifndef __SECRET_H__
#define __SECRET_H__
#define __SECRET_INSIDE_HEADER__
#include "libsecret/secret-attributes.h"
#include "libsecret/secret-collection.h"
#include "libsecret/secret-enum-types.h"
#include "libsecret/secret-item.h"
#include "libsecret/secret-password.h"
#include "libsecret/secret-prompt.h"
#include "libsecret/secret-retrievable.h"
#include "libsecret/secret-schema.h"
#include "libsecret/secret-schemas.h"
#include "libsecret/secret-service.h"
#include "libsecret/secret-types.h"
#include "libsecret/secret-value.h"
#include "libsecret/secret-version.h"
#undef __SECRET_INSIDE_HEADER__
#endif

#endif
