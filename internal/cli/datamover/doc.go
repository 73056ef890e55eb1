// Package datamover holds `salvor data-mover`: what runs inside the mover
// pods the server makes (package datamover), not typed by hand.
package datamover
