#ifndef OPENUDID_CGLIB_SHIM_H
#define OPENUDID_CGLIB_SHIM_H

#include <glib.h>

#endif
