#ifndef OPENUDID_CLIBSECRET_SHIM_H
#define OPENUDID_CLIBSECRET_SHIM_H

#include <glib.h>

/*
 * libsecret's headers, as <libsecret/secret.h> includes them, through the
 * link libsecret -> /usr/include/libsecret-1/libsecret beside this file.
 * libsecret's pkg-config file would add that directory to the search path,
 * but it also passes -pthread (through gio), which SwiftPM refuses with a
 * warning on every build. Within the directory the headers include each
 * other with quotes, so the link is all they need.
 */
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

/*
 * A SecretService proxy on a connection the caller chose.
 *
 * libsecret only offers proxies on the process-wide session bus: SecretService's
 * GObject constructor sets "g-bus-type" to the session bus on every instance,
 * which makes GDBusProxy ignore (and assert against) a "g-connection". This
 * subclass chains up to that constructor and then clears the bus type while the
 * object is still under construction, so the proxy uses the given connection.
 * Everything else (collections, items, prompts, sessions) follows the proxy's
 * connection already.
 *
 * Written by hand rather than with G_DEFINE_TYPE because a header can only hold
 * static inline functions, and g_initable_new is C-variadic, which Swift cannot
 * call.
 */

static GObject *
openudid_secret_service_constructor (GType type, guint n_properties, GObjectConstructParam *properties)
{
	GObjectClass *secret_service_class = G_OBJECT_CLASS (g_type_class_peek (SECRET_TYPE_SERVICE));
	GObject *object = secret_service_class->constructor (type, n_properties, properties);
	g_object_set (object, "g-bus-type", G_BUS_TYPE_NONE, NULL);
	return object;
}

static void
openudid_secret_service_class_init (gpointer klass, gpointer data)
{
	(void) data;
	G_OBJECT_CLASS (klass)->constructor = openudid_secret_service_constructor;
}

static inline GType
openudid_secret_service_get_type (void)
{
	static gsize type_id = 0;
	if (g_once_init_enter (&type_id)) {
		/* Another copy of this inline function may have registered it already. */
		GType type = g_type_from_name ("OpenUDIDSecretService");
		if (type == 0)
			type = g_type_register_static_simple (SECRET_TYPE_SERVICE, "OpenUDIDSecretService",
			                                      sizeof (SecretServiceClass),
			                                      openudid_secret_service_class_init,
			                                      sizeof (SecretService), NULL, (GTypeFlags) 0);
		g_once_init_leave (&type_id, type);
	}
	return (GType) type_id;
}

/* Creates and initializes (GetAll of its properties) a Secret Service proxy on `connection`. */
static inline SecretService *
openudid_secret_service_new_for_connection (GDBusConnection *connection,
                                            GCancellable *cancellable,
                                            GError **error)
{
	return (SecretService *) g_initable_new (openudid_secret_service_get_type (), cancellable, error,
	                                         "g-connection", connection,
	                                         "flags", SECRET_SERVICE_NONE,
	                                         NULL);
}

#endif
