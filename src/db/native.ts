/**
 * Where better-sqlite3 finds its native addon. In development it finds it itself; the single executable
 * sets a loaded addon here before the database opens (see build.mjs and src/sea.ts).
 */
export const nativeBinding: { addon?: unknown } = {};
