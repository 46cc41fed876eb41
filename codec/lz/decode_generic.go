//go:build !amd64 || noasm

package lz

// HasAsm reports whether the assembly decoder is in use.
const HasAsm = false

// decodeSeqs replays a block's sequences; this build has no assembly.
func decodeSeqs(dst []byte, pos, end int, q *seqs, _ *[]byte) error {
	return decodeSeqsGo(dst, pos, end, q)
}
