#ifndef OPENUDID_CLIBSECRET_SHIM_H
#define OPENUDID_CLIBSECRET_SHIM_H

#include <libsecret/secret.h>
#include <glib.h>

#endif
