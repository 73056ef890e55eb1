// Package backup holds `salvor backup`: create, get, describe, download,
// logs, verify, cancel and delete; and what the commands that download a
// backup's files share (the CAs they trust, the download request).
package backup
