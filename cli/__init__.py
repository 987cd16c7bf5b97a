"""`factledger`, the command line: a thin click shell over `factledger.ledger.Ledger`."""
