// Package clientconfig is the CLI's settings file, which `salvor client
// config set` writes (Velero's command): the namespace Salvor runs in when
// --namespace is not given, and a CA bundle the CLI trusts for downloads
// from object storage. It is the user's, in their config directory; the
// server never reads it.
package clientconfig
