module github.com/glyd/glyd

go 1.26.0

require (
	github.com/alecthomas/kong v1.17.0
	github.com/dustin/go-humanize v1.1.0
	github.com/klauspost/compress v1.20.4
	github.com/pierrec/lz4/v4 v4.1.33
	golang.org/x/sync v0.25.0
	golang.org/x/sys v0.50.0
)
