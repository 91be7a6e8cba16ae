/*
 * Example Mail: a GTK 4 app in C of a third vendor (net.example) that takes
 * part in the session through libopenudid, beside the Swift example apps.
 *
 * It shows the shared identifier, this app's own value, where the
 * identifier came from (the vote, from the report's JSON) and every change,
 * live; a switch opts the app out. It prints the identifier on standard
 * output whenever it changes, one line each time, as the Swift example apps
 * do, for scripts and tests.
 *
 *   gtk-mail [--namespace NAME] [--mirror automatic|secret-service|file|none]
 *   gtk-mail --help | --version
 *
 * A value goes after a space or an `=`, as for every program of the package.
 * SIGUSR1 flips the opt-out switch; SIGINT and SIGTERM quit. Exit status: 0
 * when quit, 1 when libopenudid refuses the options, 2 for a wrong command line.
 */
#include <glib-unix.h>
#include <gtk/gtk.h>
#include <json-glib/json-glib.h>
#include <openudid.h>
#include <stdio.h>
#include <string.h>

#define APP_ID "net.example.mail"
#define TITLE "Example Mail - " APP_ID

typedef struct {
    GtkApplication *application;
    openudid *udid;
    GtkWidget *identifier;
    GtkWidget *app_value;
    GtkWidget *origin;
    GtkWidget *votes;
    GtkWidget *place;
    GtkWidget *opt_out;
    GtkWidget *changes;
    const char *namespace_name;
    openudid_mirror mirror;
    int status;
    /* Set on the first change: until then the first resolution is still running. */
    gboolean started;
} Mail;

/* "0123abcd4567..." as "0123abcd 4567...": groups of eight, easy to compare across windows. */
static char *grouped(const char *id) {
    GString *text = g_string_new(NULL);
    for (size_t i = 0; id[i] != '\0'; i++) {
        if (i > 0 && i % 8 == 0) g_string_append_c(text, ' ');
        g_string_append_c(text, id[i]);
    }
    return g_string_free(text, FALSE);
}

/* Fills in where the identifier came from, from the latest report. */
static void show_provenance(Mail *mail) {
    char *json = openudid_report_json(mail->udid);
    JsonParser *parser = json_parser_new();
    if (json == NULL || !json_parser_load_from_data(parser, json, -1, NULL)) {
        gtk_label_set_text(GTK_LABEL(mail->origin), json == NULL ? openudid_last_error() : "the report is not JSON");
        g_object_unref(parser);
        openudid_free(json);
        return;
    }
    JsonObject *report = json_node_get_object(json_parser_get_root(parser));
    const char *origin = json_object_get_string_member_with_default(report, "origin", "?");
    gtk_label_set_text(GTK_LABEL(mail->origin), origin);

    guint apps = 0, mirrors = 0, disagreeing = 0;
    if (json_object_has_member(report, "agreeing")) {
        JsonArray *agreeing = json_object_get_array_member(report, "agreeing");
        for (guint i = 0; i < json_array_get_length(agreeing); i++) {
            JsonObject *ballot = json_array_get_object_element(agreeing, i);
            if (g_strcmp0(json_object_get_string_member_with_default(ballot, "kind", ""), "mirror") == 0) {
                mirrors++;
            } else {
                apps++;
            }
        }
    }
    if (json_object_has_member(report, "disagreeing")) {
        disagreeing = json_array_get_length(json_object_get_array_member(report, "disagreeing"));
    }
    char *votes = g_strcmp0(origin, "opted-out") == 0
        ? g_strdup("this app opted out: it does not vote")
        : g_strdup_printf("%u app%s and %u mirror%s agreed, %u disagreed", apps, apps == 1 ? "" : "s", mirrors,
                          mirrors == 1 ? "" : "s", disagreeing);
    gtk_label_set_text(GTK_LABEL(mail->votes), votes);
    g_free(votes);

    JsonNode *slot = json_object_get_member(report, "slot");
    JsonObject *mirror = json_object_get_object_member(report, "mirror");
    const char *store = mirror ? json_object_get_string_member_with_default(mirror, "store", NULL) : NULL;
    char *place = slot && !json_node_is_null(slot)
        ? g_strdup_printf("serves selection slot %" G_GINT64_FORMAT "; vendor mirror: %s", json_node_get_int(slot), store ? store : "none")
        : g_strdup_printf("serves no selection slot; vendor mirror: %s", store ? store : "none");
    gtk_label_set_text(GTK_LABEL(mail->place), place);
    g_free(place);

    g_object_unref(parser);
    openudid_free(json);
}

typedef struct {
    Mail *mail;
    char *id;
} Change;

static void opt_out_toggled(GObject *toggle, GParamSpec *spec, gpointer data);

/* On the GTK main loop: a change the library reported. */
static gboolean show_change(gpointer data) {
    Change *change = data;
    Mail *mail = change->mail;
    char app_value[OPENUDID_APP_VALUE_SIZE] = "";

    printf("%s\n", change->id);
    fflush(stdout);
    if (mail->udid == NULL) return G_SOURCE_REMOVE;
    if (!mail->started) {
        mail->started = TRUE;
        /* The switch shows the opt-out the app kept from an earlier run. */
        char *json = openudid_report_json(mail->udid);
        JsonParser *parser = json_parser_new();
        if (json != NULL && json_parser_load_from_data(parser, json, -1, NULL)) {
            JsonObject *report = json_node_get_object(json_parser_get_root(parser));
            JsonNode *opted = json_object_get_member(report, "optedOut");
            gboolean out = opted != NULL && !json_node_is_null(opted) && g_strcmp0(json_node_get_string(opted), "app") == 0;
            g_signal_handlers_block_by_func(mail->opt_out, opt_out_toggled, mail);
            gtk_switch_set_active(GTK_SWITCH(mail->opt_out), out);
            g_signal_handlers_unblock_by_func(mail->opt_out, opt_out_toggled, mail);
        }
        g_object_unref(parser);
        openudid_free(json);
    }

    char *shown = grouped(change->id);
    gtk_label_set_text(GTK_LABEL(mail->identifier), shown);
    g_free(shown);
    openudid_app_value(mail->udid, app_value);
    gtk_label_set_text(GTK_LABEL(mail->app_value), app_value);
    show_provenance(mail);

    GDateTime *now = g_date_time_new_now_local();
    char *when = g_date_time_format(now, "%H:%M:%S");
    char *line = g_strdup_printf("%s  %s", when, change->id);
    GtkWidget *row = gtk_label_new(line);
    gtk_widget_add_css_class(row, "monospace");
    gtk_label_set_xalign(GTK_LABEL(row), 0);
    gtk_list_box_prepend(GTK_LIST_BOX(mail->changes), row);
    g_free(line);
    g_free(when);
    g_date_time_unref(now);
    return G_SOURCE_REMOVE;
}

static void free_change(gpointer data) {
    Change *change = data;
    g_free(change->id);
    g_free(change);
}

/* On a thread of libopenudid's: copy the value and hand it to the main loop. */
static void on_change(const char *id, void *context) {
    Change *change = g_new(Change, 1);
    change->mail = context;
    change->id = g_strdup(id);
    g_idle_add_full(G_PRIORITY_DEFAULT, show_change, change, free_change);
}

/* Twice a second: other apps come, go and vote without changing the identifier. */
static gboolean refresh_provenance(gpointer data) {
    Mail *mail = data;
    if (mail->udid != NULL && mail->started) show_provenance(mail);
    return G_SOURCE_CONTINUE;
}

static void opt_out_toggled(GObject *toggle, GParamSpec *spec, gpointer data) {
    Mail *mail = data;
    (void)spec;
    gboolean out = gtk_switch_get_active(GTK_SWITCH(toggle));
    int code = out ? openudid_opt_out(mail->udid) : openudid_opt_in(mail->udid);
    if (code != OPENUDID_OK) {
        fprintf(stderr, "gtk-mail: %s\n", openudid_last_error());
    }
}

static gboolean flip_opt_out(gpointer data) {
    Mail *mail = data;
    gtk_switch_set_active(GTK_SWITCH(mail->opt_out), !gtk_switch_get_active(GTK_SWITCH(mail->opt_out)));
    return G_SOURCE_CONTINUE;
}

static gboolean quit(gpointer data) {
    Mail *mail = data;
    g_application_quit(G_APPLICATION(mail->application));
    return G_SOURCE_CONTINUE;
}

static GtkWidget *heading(const char *text) {
    GtkWidget *label = gtk_label_new(NULL);
    char *markup = g_markup_printf_escaped("<b>%s</b>", text);
    gtk_label_set_markup(GTK_LABEL(label), markup);
    gtk_label_set_xalign(GTK_LABEL(label), 0);
    gtk_widget_set_margin_top(label, 10);
    g_free(markup);
    return label;
}

static GtkWidget *value_label(GtkWidget *box, gboolean monospace) {
    GtkWidget *label = gtk_label_new("…");
    gtk_label_set_xalign(GTK_LABEL(label), 0);
    gtk_label_set_wrap(GTK_LABEL(label), TRUE);
    if (monospace) gtk_widget_add_css_class(label, "monospace");
    gtk_box_append(GTK_BOX(box), label);
    return label;
}

static void activate(GtkApplication *application, gpointer data) {
    Mail *mail = data;
    openudid_options *options = NULL;
    int code = openudid_options_new(&options);
    if (code == OPENUDID_OK) code = openudid_options_set_namespace(options, mail->namespace_name);
    if (code == OPENUDID_OK) code = openudid_options_set_mirror(options, mail->mirror);
    if (code == OPENUDID_OK) code = openudid_open_with(APP_ID, NULL, options, &mail->udid);
    openudid_options_free(options);
    if (code != OPENUDID_OK) {
        fprintf(stderr, "gtk-mail: %s\n", openudid_last_error());
        mail->status = 1;
        g_application_quit(G_APPLICATION(application));
        return;
    }

    GtkWidget *window = gtk_application_window_new(application);
    gtk_window_set_title(GTK_WINDOW(window), TITLE);
    gtk_window_set_default_size(GTK_WINDOW(window), 620, 430);

    GtkWidget *box = gtk_box_new(GTK_ORIENTATION_VERTICAL, 4);
    gtk_widget_set_margin_start(box, 16);
    gtk_widget_set_margin_end(box, 16);
    gtk_widget_set_margin_top(box, 12);
    gtk_widget_set_margin_bottom(box, 12);

    GtkWidget *title = gtk_label_new(NULL);
    gtk_label_set_markup(GTK_LABEL(title), "<span size='x-large' weight='bold'>Example Mail</span>");
    gtk_label_set_xalign(GTK_LABEL(title), 0);
    gtk_box_append(GTK_BOX(box), title);
    char *about = mail->namespace_name
        ? g_strdup_printf(APP_ID " · vendor net.example · C and GTK 4 on libopenudid %s · namespace %s", openudid_version(), mail->namespace_name)
        : g_strdup_printf(APP_ID " · vendor net.example · C and GTK 4 on libopenudid %s", openudid_version());
    GtkWidget *subtitle = gtk_label_new(about);
    gtk_label_set_xalign(GTK_LABEL(subtitle), 0);
    gtk_widget_add_css_class(subtitle, "dim-label");
    gtk_box_append(GTK_BOX(box), subtitle);
    g_free(about);

    gtk_box_append(GTK_BOX(box), heading("Shared identifier"));
    mail->identifier = value_label(box, TRUE);
    gtk_box_append(GTK_BOX(box), heading("This app's own value"));
    mail->app_value = value_label(box, TRUE);
    gtk_box_append(GTK_BOX(box), heading("Where it came from"));
    mail->origin = value_label(box, FALSE);
    mail->votes = value_label(box, FALSE);
    mail->place = value_label(box, FALSE);

    GtkWidget *row = gtk_box_new(GTK_ORIENTATION_HORIZONTAL, 12);
    gtk_widget_set_margin_top(row, 10);
    GtkWidget *row_label = gtk_label_new("Opt this app out");
    gtk_widget_set_hexpand(row_label, TRUE);
    gtk_label_set_xalign(GTK_LABEL(row_label), 0);
    mail->opt_out = gtk_switch_new();
    gtk_box_append(GTK_BOX(row), row_label);
    gtk_box_append(GTK_BOX(row), mail->opt_out);
    gtk_box_append(GTK_BOX(box), row);

    gtk_box_append(GTK_BOX(box), heading("Changes"));
    mail->changes = gtk_list_box_new();
    gtk_list_box_set_selection_mode(GTK_LIST_BOX(mail->changes), GTK_SELECTION_NONE);
    GtkWidget *scroller = gtk_scrolled_window_new();
    gtk_scrolled_window_set_child(GTK_SCROLLED_WINDOW(scroller), mail->changes);
    gtk_widget_set_vexpand(scroller, TRUE);
    gtk_box_append(GTK_BOX(box), scroller);

    gtk_window_set_child(GTK_WINDOW(window), box);

    g_signal_connect(mail->opt_out, "notify::active", G_CALLBACK(opt_out_toggled), mail);

    /* The window is up at once; the first resolution runs on a library thread
     * and its identifier comes through on_change like every later one. */
    if (openudid_participate_async(mail->udid, on_change, mail) != OPENUDID_OK) {
        fprintf(stderr, "gtk-mail: %s\n", openudid_last_error());
    }
    g_timeout_add(500, refresh_provenance, mail);
    g_unix_signal_add(SIGUSR1, flip_opt_out, mail);
    g_unix_signal_add(SIGTERM, quit, mail);
    g_unix_signal_add(SIGINT, quit, mail);
    gtk_window_present(GTK_WINDOW(window));
}

static void shutdown_mail(GApplication *application, gpointer data) {
    Mail *mail = data;
    (void)application;
    /* No on_change runs after this: the pending idle callbacks see udid NULL. */
    openudid_close(mail->udid);
    mail->udid = NULL;
}

#define USAGE "usage: gtk-mail [--namespace NAME] [--mirror automatic|secret-service|file|none]"

static const char help_text[] =
    USAGE "\n"
    "\n"
    "Example Mail: shows the identifier the cooperating apps share, this app's own\n"
    "value, where the identifier came from, and each change; a switch opts it out.\n"
    "\n"
    "options:\n"
    "  --namespace NAME  a separate set of slots and files, as for openudid\n"
    "  --mirror automatic|secret-service|file|none\n"
    "                    where the vendor mirror lives (default: automatic)\n"
    "  -h, --help        show this help\n"
    "  -V, --version     print the version\n"
    "\n"
    "SIGUSR1 flips the opt-out switch; SIGINT and SIGTERM quit. Exit status: 0 when\n"
    "quit, 1 when libopenudid refuses the options, 2 for a wrong command line.\n";

/* Says what is wrong with the command line, on one line as the Swift programs
 * do, and gives the exit status of a wrong command line. */
static int usage(const char *message) {
    fprintf(stderr, "gtk-mail: %s; see 'gtk-mail --help'\n", message);
    return 2;
}

/* The value of option `name` at argv[*i]: after `=` in the same word, or the
 * next word (when it does not look like an option); NULL when there is none. */
static const char *option_value(const char *name, int argc, char **argv, int *i) {
    size_t length = strlen(name);
    if (strncmp(argv[*i], name, length) != 0) return NULL;
    if (argv[*i][length] == '=') return argv[*i] + length + 1;
    if (argv[*i][length] != '\0') return NULL;
    if (*i + 1 < argc && argv[*i + 1][0] != '-') return argv[++*i];
    return NULL;
}

/* Whether argv[i] is option `name`, with or without a value. */
static int is_option(const char *word, const char *name) {
    size_t length = strlen(name);
    return strncmp(word, name, length) == 0 && (word[length] == '\0' || word[length] == '=');
}

int main(int argc, char **argv) {
    Mail mail = {0};
    mail.mirror = OPENUDID_MIRROR_AUTOMATIC;
    /* Help and the version win wherever they stand, as for the Swift programs. */
    for (int i = 1; i < argc && strcmp(argv[i], "--") != 0; i++) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            fputs(help_text, stdout);
            return 0;
        }
        if (strcmp(argv[i], "--version") == 0 || strcmp(argv[i], "-V") == 0) {
            printf("gtk-mail %s\n", openudid_version());
            return 0;
        }
    }
    for (int i = 1; i < argc; i++) {
        const char *value;
        if (is_option(argv[i], "--namespace")) {
            if ((value = option_value("--namespace", argc, argv, &i)) == NULL) return usage("--namespace NAME needs a value");
            mail.namespace_name = value;
        } else if (is_option(argv[i], "--mirror")) {
            if ((value = option_value("--mirror", argc, argv, &i)) == NULL) return usage("--mirror needs a value");
            if (strcmp(value, "automatic") == 0) mail.mirror = OPENUDID_MIRROR_AUTOMATIC;
            else if (strcmp(value, "secret-service") == 0) mail.mirror = OPENUDID_MIRROR_SECRET_SERVICE;
            else if (strcmp(value, "file") == 0) mail.mirror = OPENUDID_MIRROR_FILE;
            else if (strcmp(value, "none") == 0) mail.mirror = OPENUDID_MIRROR_NONE;
            else {
                char message[256];
                snprintf(message, sizeof message, "--mirror must be automatic, secret-service, file or none, not '%s'", value);
                return usage(message);
            }
        } else {
            char message[256];
            if (argv[i][0] == '-') snprintf(message, sizeof message, "unknown option %s", argv[i]);
            else snprintf(message, sizeof message, "unexpected argument '%s': gtk-mail takes no arguments", argv[i]);
            return usage(message);
        }
    }
    /* Non-unique: each start is its own participant, as the Swift example apps are. */
    mail.application = gtk_application_new(APP_ID, G_APPLICATION_NON_UNIQUE);
    g_signal_connect(mail.application, "activate", G_CALLBACK(activate), &mail);
    g_signal_connect(mail.application, "shutdown", G_CALLBACK(shutdown_mail), &mail);
    int status = g_application_run(G_APPLICATION(mail.application), 1, argv);
    g_object_unref(mail.application);
    return mail.status != 0 ? mail.status : status;
}
