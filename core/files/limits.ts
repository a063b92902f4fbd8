/**
 * The limits of stored files and download URLs (spec 8): upload size, download URL lifetimes, how long
 * unreferenced files are kept, and file name length.
 */
/** The largest file `POST /api/files` accepts: 25 MiB (spec 8). */
export const FILE_UPLOAD_MAX_BYTES = 25 * 1024 * 1024;
/** How long a download URL lives unless `expiresInMs` says otherwise: 1 hour (spec 8). */
export const DEFAULT_DOWNLOAD_URL_TTL_MS = 3_600_000;
/** The longest lifetime a download URL may be given: 7 days. */
export const MAX_DOWNLOAD_URL_TTL_MS = 7 * 86_400_000;
/** How long a file nobody has referenced is kept: 24 hours. */
export const DEFAULT_UNREFERENCED_RETENTION_MS = 86_400_000;
/** The longest file name kept, in UTF-8 bytes (what common filesystems allow). */
export const MAX_FILE_NAME_BYTES = 255;
