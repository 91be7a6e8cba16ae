#ifndef OPENUDID_CLIBSECRET_SHIM_H
#define OPENUDID_CLIBSECRET_SHIM_H

/*
 * The few types and constants of GLib, GObject, GIO and libsecret that
 * OpenUDIDKit uses, declared here rather than taken from their headers, and
 * nothing to link: OpenUDIDKit resolves every function it calls with dlsym the
 * first time the Secret Service mirror is used (VendorMirror/LibSecret.swift),
 * and declares each one's type there as a C function pointer.
 *
 * So the package builds where GLib's and libsecret's development headers are
 * not installed, or are installed somewhere else (every distribution puts
 * glibconfig.h in its own library directory); only the run-time libraries are
 * needed, and only by a process that uses the Secret Service mirror.
 *
 * Everything below is part of the stable ABI of GLib 2.x and libsecret-1:
 * object types are opaque (only pointers to them cross the boundary), the few
 * structures whose fields are read (GError, GList, GValue, GTypeQuery) and the
 * first members of GObjectClass have not changed since GLib 2.0, and the
 * values of the enumerations are those of the public headers. The sizes of
 * the classes and instances that OpenUDIDKit subclasses are asked of GObject
 * at run time (g_type_query), never assumed.
 */

#include <stddef.h>
#include <stdint.h>

/* GLib's basic types (glib/gtypes.h, glibconfig.h). */
typedef char gchar;
typedef int gint;
typedef unsigned int guint;
typedef gint gboolean;
typedef void *gpointer;
typedef const void *gconstpointer;
typedef size_t gsize;
typedef ptrdiff_t gssize;
typedef uint32_t GQuark;
typedef gsize GType;

typedef guint (*GHashFunc)(gconstpointer key);
typedef gboolean (*GEqualFunc)(gconstpointer a, gconstpointer b);
typedef void (*GDestroyNotify)(gpointer data);

/* Opaque objects: GLib's and libsecret's, used only through pointers. */
typedef struct _GMainContext GMainContext;
typedef struct _GHashTable GHashTable;
typedef struct _GObject GObject;
typedef struct _GCancellable GCancellable;
typedef struct _GDBusConnection GDBusConnection;
typedef struct _GDBusProxy GDBusProxy;
typedef struct _GVariant GVariant;
typedef struct _GVariantType GVariantType;
typedef struct _GParamSpec GParamSpec;
typedef struct _GSList GSList;
typedef struct _SecretService SecretService;
typedef struct _SecretCollection SecretCollection;
typedef struct _SecretItem SecretItem;
typedef struct _SecretSchema SecretSchema;
typedef struct _SecretValue SecretValue;

/* GError (glib/gerror.h). */
typedef struct _GError {
    GQuark domain;
    gint code;
    gchar *message;
} GError;

/* GList (glib/glist.h). */
typedef struct _GList GList;
struct _GList {
    gpointer data;
    GList *next;
    GList *prev;
};

/* GValue (gobject/gvalue.h): 24 bytes on LP64, initialised to zeros. */
typedef struct _GValue {
    GType g_type;
    union {
        gint v_int;
        int64_t v_int64;
        double v_double;
        gpointer v_pointer;
    } data[2];
} GValue;

/* GTypeQuery (gobject/gtype.h): what g_type_query says of a registered type. */
typedef struct _GTypeQuery {
    GType type;
    const gchar *type_name;
    guint class_size;
    guint instance_size;
} GTypeQuery;

typedef struct _GObjectConstructParam {
    GParamSpec *pspec;
    GValue *value;
} GObjectConstructParam;

/*
 * The first members of GObjectClass (gobject/gobject.h), up to the constructor
 * that OpenUDIDKit overrides; the rest of the class is never touched here.
 */
typedef struct _OpenUDIDObjectClassHead {
    GType g_type;
    GSList *construct_properties;
    GObject *(*constructor)(GType type, guint n_construct_properties, GObjectConstructParam *construct_properties);
} OpenUDIDObjectClassHead;

typedef void (*GClassInitFunc)(gpointer g_class, gpointer class_data);
typedef void (*GInstanceInitFunc)(void *instance, gpointer g_class);

typedef enum { G_TYPE_FLAG_NONE = 0 } GTypeFlags;

/* gio/gioenums.h */
typedef enum {
    G_BUS_TYPE_STARTER = -1,
    G_BUS_TYPE_NONE = 0,
    G_BUS_TYPE_SYSTEM = 1,
    G_BUS_TYPE_SESSION = 2
} GBusType;

typedef enum {
    G_DBUS_CONNECTION_FLAGS_NONE = 0,
    G_DBUS_CONNECTION_FLAGS_AUTHENTICATION_CLIENT = (1 << 0),
    G_DBUS_CONNECTION_FLAGS_AUTHENTICATION_SERVER = (1 << 1),
    G_DBUS_CONNECTION_FLAGS_AUTHENTICATION_ALLOW_ANONYMOUS = (1 << 2),
    G_DBUS_CONNECTION_FLAGS_MESSAGE_BUS_CONNECTION = (1 << 3)
} GDBusConnectionFlags;

/* GDBusSignalCallback (gio/giotypes.h). */
typedef void (*GDBusSignalCallback)(GDBusConnection *connection, const gchar *sender_name, const gchar *object_path,
                                    const gchar *interface_name, const gchar *signal_name, GVariant *parameters,
                                    gpointer user_data);

typedef enum { G_DBUS_CALL_FLAGS_NONE = 0, G_DBUS_CALL_FLAGS_NO_AUTO_START = (1 << 0) } GDBusCallFlags;

/* The codes of G_DBUS_ERROR that the mirror tells apart. */
typedef enum {
    G_DBUS_ERROR_FAILED = 0,
    G_DBUS_ERROR_SERVICE_UNKNOWN = 2,
    G_DBUS_ERROR_NAME_HAS_NO_OWNER = 3,
    G_DBUS_ERROR_NO_REPLY = 4,
    G_DBUS_ERROR_UNKNOWN_METHOD = 19
} GDBusError;

/* The code of G_IO_ERROR that the mirror tells apart. */
typedef enum { G_IO_ERROR_CLOSED = 18, G_IO_ERROR_CANCELLED = 19 } GIOErrorEnum;

/* libsecret/secret-*.h */
typedef enum { SECRET_SERVICE_NONE = 0 } SecretServiceFlags;
typedef enum { SECRET_COLLECTION_NONE = 0 } SecretCollectionFlags;
typedef enum {
    SECRET_SEARCH_NONE = 0,
    SECRET_SEARCH_ALL = 1 << 1,
    SECRET_SEARCH_UNLOCK = 1 << 2,
    SECRET_SEARCH_LOAD_SECRETS = 1 << 3
} SecretSearchFlags;
typedef enum { SECRET_SCHEMA_NONE = 0, SECRET_SCHEMA_DONT_MATCH_NAME = 1 << 1 } SecretSchemaFlags;
typedef enum { SECRET_SCHEMA_ATTRIBUTE_STRING = 0 } SecretSchemaAttributeType;
typedef enum { SECRET_ERROR_PROTOCOL = 1, SECRET_ERROR_IS_LOCKED = 2, SECRET_ERROR_NO_SUCH_OBJECT = 3 } SecretError;

#endif
