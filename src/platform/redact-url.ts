// A database URL carries its password (postgres://user:PASSWORD@host/db, or ?password=…). Everything kopek
// shows (the serve banner, log lines, errors, doctor, admin commands' output) passes a URL, or a text that may
// quote one, through redactUrl: the one place that knows how a password sits in such a URL.

/** A PostgreSQL URL inside a text: from its scheme to the first space, quote or angle bracket. */
const PG_URL_IN_TEXT = /postgres(?:ql)?:\/\/[^\s"'<>]*/gi;

const PG_SCHEME = /postgres(?:ql)?:\/\//i;

/** The password: after the user's name and colon, up to the last `@` before the path (a bare `@` in it stays hidden). */
const USERINFO_PASSWORD = /^(postgres(?:ql)?:\/\/[^:/?#@]*:)[^/?#]*@/i;

/** A password given as a query parameter (`?password=…`, and the TLS key's `sslpassword=…`). */
const QUERY_PASSWORD = /([?&](?:ssl)?password=)[^&#]*/gi;

/** True when `text` holds a postgres:// URL (which redactUrl rewrites if it carries a password). */
export function mentionsDatabaseUrl(text: string): boolean {
  return PG_SCHEME.test(text);
}

/**
 * `text` (the URL itself or a message quoting one) with the password of every postgres:// URL in it shown as `***`:
 * `postgres://kopek:***@db/kopek`, `postgres://kopek@db/kopek?password=***`.
 */
export function redactUrl(text: string): string {
  if (!PG_SCHEME.test(text)) return text;
  return text.replace(PG_URL_IN_TEXT, (url) => url.replace(USERINFO_PASSWORD, '$1***@').replace(QUERY_PASSWORD, '$1***'));
}
