"""The bundled examples (sessions, candidate files, probes), installed with the package so that
`factledger demo` and the README tour find them in a wheel as in a source checkout; data only."""
