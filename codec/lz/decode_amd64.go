//go:build amd64 && !noasm

package lz

func decodeSeqs(dst []byte, pos, end int, q *seqs) error { return decodeSeqsGo(dst, pos, end, q) }

const HasAsm = false
