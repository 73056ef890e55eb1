// Package output prints objects the way every get and describe command does:
// a table, or the object as JSON or YAML with -o; and asks the questions
// the commands that delete ask on a terminal (Confirmed, Ask).
package output
