package safetensors

import (
	"fmt"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// A small JSON reader for safetensors headers. encoding/json would do for
// the values, but the packer needs more than values: the order of the
// entries, duplicate keys reported rather than merged, and the exact byte
// range of every data_offsets array, so that the header can be kept (and
// rebuilt) byte for byte.

// maxDepth bounds the nesting of values the reader skips (an unknown key's
// value), so hostile input cannot exhaust the stack.
const maxDepth = 64

type scanner struct {
	b   []byte
	pos int
}

func (s *scanner) errorf(format string, args ...any) error {
	return invalidf("header byte %d: %s", s.pos, fmt.Sprintf(format, args...))
}

func (s *scanner) ws() {
	for s.pos < len(s.b) {
		switch s.b[s.pos] {
		case ' ', '\t', '\n', '\r':
			s.pos++
		default:
			return
		}
	}
}

// peek returns the next non-space byte, or 0 at the end.
func (s *scanner) peek() byte {
	s.ws()
	if s.pos >= len(s.b) {
		return 0
	}
	return s.b[s.pos]
}

func (s *scanner) expect(c byte) error {
	if s.peek() != c {
		if s.pos >= len(s.b) {
			return s.errorf("unexpected end of JSON, want %q", c)
		}
		return s.errorf("want %q, found %q", c, s.b[s.pos])
	}
	s.pos++
	return nil
}

// rawStr reads a JSON string without escapes and returns its bytes (no
// copy); a string with escapes is decoded by str (escaped true).
func (s *scanner) rawStr() ([]byte, bool, error) {
	if s.peek() != '"' {
		_, err := s.str()
		return nil, false, err
	}
	for i := s.pos + 1; i < len(s.b); i++ {
		switch c := s.b[i]; {
		case c == '"':
			v := s.b[s.pos+1 : i]
			if !utf8.Valid(v) {
				return nil, false, s.errorf("string is not valid UTF-8")
			}
			s.pos = i + 1
			return v, false, nil
		case c == '\\' || c < 0x20:
			v, err := s.str()
			return []byte(v), true, err
		}
	}
	_, err := s.str()
	return nil, false, err
}

// str reads a JSON string and returns its decoded value.
func (s *scanner) str() (string, error) {
	if err := s.expect('"'); err != nil {
		return "", err
	}
	start := s.pos
	// Fast path: no escapes.
	for s.pos < len(s.b) {
		c := s.b[s.pos]
		if c == '"' {
			v := s.b[start:s.pos]
			s.pos++
			if !utf8.Valid(v) {
				return "", s.errorf("string is not valid UTF-8")
			}
			return string(v), nil
		}
		if c == '\\' {
			break
		}
		if c < 0x20 {
			return "", s.errorf("control character in string")
		}
		s.pos++
	}
	var sb strings.Builder
	sb.Write(s.b[start:s.pos])
	for {
		if s.pos >= len(s.b) {
			return "", s.errorf("unterminated string")
		}
		c := s.b[s.pos]
		switch {
		case c == '"':
			s.pos++
			v := sb.String()
			if !utf8.ValidString(v) {
				return "", s.errorf("string is not valid UTF-8")
			}
			return v, nil
		case c < 0x20:
			return "", s.errorf("control character in string")
		case c != '\\':
			sb.WriteByte(c)
			s.pos++
			continue
		}
		if s.pos+1 >= len(s.b) {
			return "", s.errorf("unterminated string")
		}
		e := s.b[s.pos+1]
		s.pos += 2
		switch e {
		case '"', '\\', '/':
			sb.WriteByte(e)
		case 'b':
			sb.WriteByte('\b')
		case 'f':
			sb.WriteByte('\f')
		case 'n':
			sb.WriteByte('\n')
		case 'r':
			sb.WriteByte('\r')
		case 't':
			sb.WriteByte('\t')
		case 'u':
			r, ok := s.hex4()
			if !ok {
				return "", s.errorf("bad \\u escape")
			}
			if utf16.IsSurrogate(r) {
				// A pair: \uD8xx\uDCxx.
				if s.pos+1 < len(s.b) && s.b[s.pos] == '\\' && s.b[s.pos+1] == 'u' {
					s.pos += 2
					r2, ok := s.hex4()
					if !ok {
						return "", s.errorf("bad \\u escape")
					}
					r = utf16.DecodeRune(r, r2)
				} else {
					r = utf8.RuneError
				}
				if r == utf8.RuneError {
					return "", s.errorf("lone surrogate in \\u escape")
				}
			}
			sb.WriteRune(r)
		default:
			return "", s.errorf("bad escape \\%c", e)
		}
	}
}

func (s *scanner) hex4() (rune, bool) {
	if s.pos+4 > len(s.b) {
		return 0, false
	}
	var r rune
	for _, c := range s.b[s.pos : s.pos+4] {
		r <<= 4
		switch {
		case c >= '0' && c <= '9':
			r |= rune(c - '0')
		case c >= 'a' && c <= 'f':
			r |= rune(c - 'a' + 10)
		case c >= 'A' && c <= 'F':
			r |= rune(c - 'A' + 10)
		default:
			return 0, false
		}
	}
	s.pos += 4
	return r, true
}

// uint reads a non-negative JSON integer below 2^63.
func (s *scanner) uint() (int64, error) {
	s.ws()
	start := s.pos
	var v uint64
	for s.pos < len(s.b) && s.b[s.pos] >= '0' && s.b[s.pos] <= '9' {
		if v > (1<<63-1-9)/10 {
			return 0, s.errorf("integer too large")
		}
		v = v*10 + uint64(s.b[s.pos]-'0')
		s.pos++
	}
	switch {
	case s.pos == start:
		if s.pos < len(s.b) && s.b[s.pos] == '-' {
			return 0, s.errorf("negative number where a size or offset belongs")
		}
		return 0, s.errorf("want a non-negative integer")
	case s.b[start] == '0' && s.pos-start > 1:
		return 0, s.errorf("number with a leading zero")
	}
	if s.pos < len(s.b) && (s.b[s.pos] == '.' || s.b[s.pos] == 'e' || s.b[s.pos] == 'E') {
		return 0, s.errorf("want an integer, found a fraction or exponent")
	}
	return int64(v), nil
}

// uints reads an array of non-negative integers.
func (s *scanner) uints() ([]int64, error) {
	if err := s.expect('['); err != nil {
		return nil, err
	}
	var out []int64
	if s.peek() == ']' {
		s.pos++
		return []int64{}, nil
	}
	for {
		v, err := s.uint()
		if err != nil {
			return nil, err
		}
		out = append(out, v)
		switch s.peek() {
		case ',':
			s.pos++
		case ']':
			s.pos++
			return out, nil
		default:
			return nil, s.errorf("want ',' or ']' in array")
		}
	}
}

// skip skips any JSON value.
func (s *scanner) skip(depth int) error {
	if depth > maxDepth {
		return s.errorf("JSON nested too deeply")
	}
	switch c := s.peek(); {
	case c == '"':
		_, err := s.str()
		return err
	case c == '{' || c == '[':
		closer := byte('}')
		if c == '[' {
			closer = ']'
		}
		s.pos++
		if s.peek() == closer {
			s.pos++
			return nil
		}
		for {
			if c == '{' {
				if _, err := s.str(); err != nil {
					return err
				}
				if err := s.expect(':'); err != nil {
					return err
				}
			}
			if err := s.skip(depth + 1); err != nil {
				return err
			}
			switch s.peek() {
			case ',':
				s.pos++
			case closer:
				s.pos++
				return nil
			default:
				return s.errorf("want ',' or %q", closer)
			}
		}
	case c == '-' || (c >= '0' && c <= '9'):
		if c == '-' {
			s.pos++
		}
		digits := 0
		for s.pos < len(s.b) && s.b[s.pos] >= '0' && s.b[s.pos] <= '9' {
			s.pos++
			digits++
		}
		if digits == 0 {
			return s.errorf("bad number")
		}
		if s.pos < len(s.b) && s.b[s.pos] == '.' {
			s.pos++
			d := 0
			for s.pos < len(s.b) && s.b[s.pos] >= '0' && s.b[s.pos] <= '9' {
				s.pos++
				d++
			}
			if d == 0 {
				return s.errorf("bad number")
			}
		}
		if s.pos < len(s.b) && (s.b[s.pos] == 'e' || s.b[s.pos] == 'E') {
			s.pos++
			if s.pos < len(s.b) && (s.b[s.pos] == '+' || s.b[s.pos] == '-') {
				s.pos++
			}
			d := 0
			for s.pos < len(s.b) && s.b[s.pos] >= '0' && s.b[s.pos] <= '9' {
				s.pos++
				d++
			}
			if d == 0 {
				return s.errorf("bad number")
			}
		}
		return nil
	default:
		for _, lit := range []string{"true", "false", "null"} {
			if strings.HasPrefix(string(s.b[s.pos:min(len(s.b), s.pos+5)]), lit) {
				s.pos += len(lit)
				return nil
			}
		}
		if s.pos >= len(s.b) {
			return s.errorf("unexpected end of JSON")
		}
		return s.errorf("unexpected %q", s.b[s.pos])
	}
}
