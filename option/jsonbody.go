package option

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/shotd/shotd"
)

// MaxListItems is the most items a list option takes.
const MaxListItems = 100

// maxNameBytes bounds an option name read from JSON; no option name comes near it.
const maxNameBytes = 256

// ParamsFromJSON reads a JSON object of options with no size limit: see ReadJSONParams.
func ParamsFromJSON(body []byte) (Params, error) {
	return ReadJSONParams(body, Limits{})
}

// ReadJSONParams reads a JSON object of options. Values keep their JSON text for numbers and
// booleans, as a signature of a POST body covers them; strings are unquoted; arrays become one
// value per item; null is "not given"; of a name given twice the last value counts, as with
// encoding/json.
//
// It reads the object as a stream and stops at the first limit passed, having built nothing
// beyond it: more members than there are options, more than MaxListItems items in an array, or
// a name longer than any option's are invalid_options; a string longer than lim.MaxSourceBytes
// is content_too_large. (Decoding first and checking after cost 2 GB of allocations for a 21 MiB
// body of one-letter array items.) Invalid JSON, or JSON that is not an object, is
// invalid_request.
func ReadJSONParams(body []byte, lim Limits) (Params, error) {
	// json.Valid first, which allocates nothing: the scanner below may then trust the syntax,
	// and trailing text such as "{}}" is refused.
	if !json.Valid(body) {
		return nil, shotd.Errorf(shotd.CodeInvalidRequest, "the body must be one valid JSON object of options")
	}
	s := jsonScanner{b: body}
	s.space()
	if !s.next('{') {
		return nil, shotd.Errorf(shotd.CodeInvalidRequest, "the body must be a JSON object of options")
	}
	var ps Params
	index := map[string]int{}
	for members := 0; s.more('}'); members++ {
		rawName := s.name()
		if len(rawName) > maxNameBytes+2 {
			name := clip(string(rawName[1 : maxNameBytes+1]))
			return nil, fieldsError(shotd.FieldError{Field: name, Message: fmt.Sprintf("unknown option %q", name)})
		}
		var name string
		_ = json.Unmarshal(rawName, &name) // valid JSON: cannot fail
		if members == len(OptionTable) {
			return nil, fieldsError(shotd.FieldError{Field: clip(name), Message: fmt.Sprintf("more members than the %d options there are", len(OptionTable))})
		}
		p, err := s.param(name, lim)
		if err != nil {
			return nil, err
		}
		if p == nil {
			continue // null
		}
		if i, ok := index[name]; ok {
			ps[i] = *p
			continue
		}
		index[name] = len(ps)
		ps = append(ps, *p)
	}
	// Sorted by name, as the map this replaces gave them: messages list the fields in a stable
	// order whatever order the client sent.
	slices.SortFunc(ps, func(a, b Param) int {
		switch {
		case a.Name < b.Name:
			return -1
		case a.Name > b.Name:
			return 1
		}
		return 0
	})
	return ps, nil
}

func fieldsError(f shotd.FieldError) *shotd.Error {
	return &shotd.Error{Code: shotd.CodeInvalidOptions, Message: summarize([]shotd.FieldError{f}), Fields: []shotd.FieldError{f}}
}

// param reads the value at the scanner as the option name; nil for null.
func (s *jsonScanner) param(name string, lim Limits) (*Param, error) {
	p := &Param{Name: name}
	switch s.peek() {
	case 'n':
		s.skip()
		return nil, nil
	case '[':
		p.Array = true
		s.i++
		for items := 0; s.more(']'); items++ {
			if items == MaxListItems {
				return nil, fieldsError(shotd.FieldError{Field: clip(name), Message: fmt.Sprintf("at most %d items", MaxListItems)})
			}
			if p.Invalid != "" || s.peek() != '"' {
				p.Invalid, p.Values = "must be an array of strings", nil
				s.skip()
				continue
			}
			v, err := s.string(name, lim)
			if err != nil {
				return nil, err
			}
			p.Values = append(p.Values, v)
		}
	case '"':
		v, err := s.string(name, lim)
		if err != nil {
			return nil, err
		}
		p.Values = []string{v}
	case '{':
		s.skip()
		p.Invalid = "must be a string, number or boolean"
	default:
		start := s.i
		s.skip()
		v, ok := jsonScalar(s.b[start:s.i])
		if !ok {
			p.Invalid = "must be a string, number or boolean"
			break
		}
		p.Values = []string{v}
	}
	return p, nil
}

// string decodes the string at the scanner, refusing it before decoding when even its shortest
// reading (each escape, at most six bytes, read as one byte) is over the limit. Every string
// is bounded, not only the four sources: no option needs more.
func (s *jsonScanner) string(name string, lim Limits) (string, error) {
	raw := s.str()
	tooLarge := func() error {
		return &shotd.Error{Code: shotd.CodeContentTooLarge,
			Message: fmt.Sprintf("%s is larger than %d bytes", clip(name), lim.MaxSourceBytes),
			Fields:  []shotd.FieldError{{Field: clip(name), Message: fmt.Sprintf("larger than %d bytes", lim.MaxSourceBytes)}}}
	}
	if lim.MaxSourceBytes > 0 && len(raw)-2-5*bytes.Count(raw, []byte{'\\'}) > lim.MaxSourceBytes {
		return "", tooLarge()
	}
	var v string
	_ = json.Unmarshal(raw, &v) // valid JSON: cannot fail
	if lim.MaxSourceBytes > 0 && len(v) > lim.MaxSourceBytes {
		return "", tooLarge()
	}
	return v, nil
}

// jsonScanner walks JSON text that json.Valid accepted, without allocating.
type jsonScanner struct {
	b []byte
	i int
}

func (s *jsonScanner) space() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

func (s *jsonScanner) peek() byte {
	if s.i < len(s.b) {
		return s.b[s.i]
	}
	return 0
}

// next consumes c when it is the next byte.
func (s *jsonScanner) next(c byte) bool {
	if s.peek() == c {
		s.i++
		return true
	}
	return false
}

// more moves to the next member or item of valid JSON, past white space and the comma before
// it; false at end (the closing brace or bracket), which it consumes.
func (s *jsonScanner) more(end byte) bool {
	s.space()
	if s.next(end) {
		return false
	}
	s.next(',')
	s.space()
	return true
}

// name consumes a member's name of valid JSON and the colon after it, and returns the name raw,
// quotes included.
func (s *jsonScanner) name() []byte {
	raw := s.str()
	s.space()
	s.next(':')
	s.space()
	return raw
}

// str consumes the string at the scanner and returns it raw, quotes included.
func (s *jsonScanner) str() []byte {
	start := s.i
	for j := s.i + 1; j < len(s.b); j++ {
		switch s.b[j] {
		case '\\':
			j++
		case '"':
			s.i = j + 1
			return s.b[start:s.i]
		}
	}
	s.i = len(s.b)
	return s.b[start:]
}

// skip consumes one value of any kind.
func (s *jsonScanner) skip() {
	switch s.peek() {
	case '"':
		s.str()
	case '{', '[':
		depth := 0
		for s.i < len(s.b) {
			switch s.b[s.i] {
			case '"':
				s.str()
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					s.i++
					return
				}
			}
			s.i++
		}
	default: // a number, true, false or null
		for s.i < len(s.b) {
			switch s.b[s.i] {
			case ' ', '\t', '\n', '\r', ',', ']', '}', ':':
				return
			}
			s.i++
		}
	}
}

// JSONString returns the value of the top-level member name of a JSON object when it is a
// string, without building anything else: authentication reads access_key from a body it has
// not parsed yet. The body need not be valid JSON; then the answer is only a best guess, which
// the full parse after authentication checks.
func JSONString(body []byte, name string) (string, bool) {
	s := jsonScanner{b: body}
	s.space()
	if !s.next('{') {
		return "", false
	}
	for s.i < len(s.b) {
		s.space()
		if s.peek() != '"' {
			return "", false
		}
		rawName := s.str()
		s.space()
		if !s.next(':') {
			return "", false
		}
		s.space()
		if len(rawName) == len(name)+2 && string(rawName[1:len(rawName)-1]) == name && s.peek() == '"' {
			var v string
			if json.Unmarshal(s.str(), &v) != nil {
				return "", false
			}
			return v, true
		}
		start := s.i
		s.skip()
		s.space()
		if s.i == start || !s.next(',') {
			return "", false
		}
	}
	return "", false
}

// RawMember is a member of a JSON object (Name set) or an item of an array: its value's text, a
// slice of the input, not a copy.
type RawMember struct {
	Name  string
	Value []byte
}

// SplitJSON splits valid JSON text into the members of its object or the items of its array,
// stopping after max of them (more reports that there were more). kind is the first byte of the
// value: '{', '[', or another for a scalar, which has no parts. It copies nothing but the
// names, so a body of a million items costs nothing beyond max. Invalid JSON is
// invalid_request.
func SplitJSON(body []byte, max int) (parts []RawMember, kind byte, more bool, err error) {
	if !json.Valid(body) {
		return nil, 0, false, shotd.Errorf(shotd.CodeInvalidRequest, "the body must be valid JSON")
	}
	s := jsonScanner{b: body}
	s.space()
	kind = s.peek()
	if kind != '{' && kind != '[' {
		return nil, kind, false, nil
	}
	s.i++
	end := byte('}')
	if kind == '[' {
		end = ']'
	}
	for s.more(end) {
		if len(parts) == max {
			return parts, kind, true, nil
		}
		var m RawMember
		if kind == '{' {
			_ = json.Unmarshal(s.name(), &m.Name) // valid JSON: cannot fail
		}
		start := s.i
		s.skip()
		m.Value = s.b[start:s.i]
		parts = append(parts, m)
	}
	return parts, kind, false, nil
}
