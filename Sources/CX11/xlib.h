#ifndef OPENUDID_CXLIB_H
#define OPENUDID_CXLIB_H

#include "shim.h"

#include <X11/Xlib.h>
#include <X11/Xatom.h>
#include <X11/Xutil.h>
#include <X11/extensions/Xfixes.h>
#include <X11/Xlib-xcb.h>

#endif
