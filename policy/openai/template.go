package openai

import (
	"cmp"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"text/template/parse"
)

// promptTemplate is a prompt template in text/template's syntax, run by a
// small evaluator of this package instead of text/template itself.
//
// The reason is size: text/template looks methods up by name at run time,
// which makes the linker keep every exported method of every type in the
// binary, most of the OpenAI SDK among them, and every frog process maps
// them (docs/llm.md has the figures). The evaluator reads fields only, so
// the linker can drop what nothing calls.
//
// The syntax is text/template's (the parser is text/template/parse); what
// runs is a subset: text, comments, {{.}}, fields and map keys ({{.Task.Repo}},
// {{$.Tools}}), {{if}}, {{with}} and {{range}} over slices, arrays, maps and integers
// (each with {{else}}), parenthesized pipelines, constants, and the
// functions join, len, printf, print, eq, ne, not, and, or. A template that
// uses anything else (methods, variables other than $, {{define}},
// {{template}}, {{break}}) is refused when it is parsed, with the construct
// named. Where both run a template, the output is text/template's, byte for
// byte (a test holds the evaluator to that).
type promptTemplate struct {
	name string
	root *parse.ListNode
}

// templateFuncs are the functions a prompt template may call.
var templateFuncs = map[string]any{
	"join": true, "len": true, "printf": true, "print": true,
	"eq": true, "ne": true, "not": true, "and": true, "or": true,
}

// parseTemplate parses text as a prompt template and checks that it uses
// only what the evaluator runs.
func parseTemplate(name, text string) (*promptTemplate, error) {
	trees, err := parse.Parse(name, text, "", "", templateFuncs)
	if err != nil {
		return nil, err
	}
	for n := range trees {
		if n != name {
			return nil, fmt.Errorf("%s: {{define %q}}: frog's prompt templates do not support define or template", name, n)
		}
	}
	t := trees[name]
	if t == nil || t.Root == nil {
		return &promptTemplate{name: name, root: &parse.ListNode{}}, nil
	}
	if err := check(t.Root); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return &promptTemplate{name: name, root: t.Root}, nil
}

// check refuses the constructs the evaluator does not run.
func check(n parse.Node) error {
	switch n := n.(type) {
	case nil:
		return nil
	case *parse.ListNode:
		if n == nil {
			return nil
		}
		for _, c := range n.Nodes {
			if err := check(c); err != nil {
				return err
			}
		}
	case *parse.TextNode, *parse.CommentNode:
	case *parse.ActionNode:
		return checkPipe(n.Pipe)
	case *parse.IfNode:
		return checkBranch(&n.BranchNode)
	case *parse.WithNode:
		return checkBranch(&n.BranchNode)
	case *parse.RangeNode:
		return checkBranch(&n.BranchNode)
	default:
		return unsupported(n)
	}
	return nil
}

func checkBranch(b *parse.BranchNode) error {
	if err := checkPipe(b.Pipe); err != nil {
		return err
	}
	if err := check(b.List); err != nil {
		return err
	}
	return check(b.ElseList)
}

func checkPipe(p *parse.PipeNode) error {
	if p == nil {
		return nil
	}
	if len(p.Decl) > 0 {
		return unsupported(p)
	}
	for _, c := range p.Cmds {
		for i, a := range c.Args {
			switch a := a.(type) {
			case *parse.FieldNode:
				if i == 0 && len(c.Args) > 1 {
					return unsupported(c) // a field given arguments: a method call
				}
			case *parse.VariableNode:
				if a.Ident[0] != "$" {
					return unsupported(a)
				}
			case *parse.PipeNode:
				if err := checkPipe(a); err != nil {
					return err
				}
			case *parse.IdentifierNode:
				if i > 0 {
					return unsupported(a)
				}
			case *parse.DotNode, *parse.StringNode, *parse.NumberNode, *parse.BoolNode:
			default:
				return unsupported(a)
			}
		}
	}
	return nil
}

func unsupported(n parse.Node) error {
	return fmt.Errorf("%s: frog's prompt templates do not support this (fields, if, with, range, and the functions join, len, printf, print, eq, ne, not, and, or are what they run; see docs/llm.md)", n)
}

// execute writes the template applied to data to w.
func (t *promptTemplate) execute(w *strings.Builder, data any) error {
	root := reflect.ValueOf(data)
	s := &state{w: w, root: root}
	if err := s.walk(root, t.root); err != nil {
		return fmt.Errorf("template: %s: %w", t.name, err)
	}
	return nil
}

type state struct {
	w    *strings.Builder
	root reflect.Value
}

func (s *state) walk(dot reflect.Value, n parse.Node) error {
	switch n := n.(type) {
	case *parse.ListNode:
		for _, c := range n.Nodes {
			if err := s.walk(dot, c); err != nil {
				return err
			}
		}
	case *parse.TextNode:
		s.w.Write(n.Text)
	case *parse.CommentNode:
	case *parse.ActionNode:
		v, err := s.pipe(dot, n.Pipe)
		if err != nil {
			return err
		}
		s.print(v)
	case *parse.IfNode:
		return s.branch(dot, &n.BranchNode, false)
	case *parse.WithNode:
		return s.branch(dot, &n.BranchNode, true)
	case *parse.RangeNode:
		return s.rangeOver(dot, n)
	default:
		return unsupported(n)
	}
	return nil
}

func (s *state) branch(dot reflect.Value, b *parse.BranchNode, with bool) error {
	v, err := s.pipe(dot, b.Pipe)
	if err != nil {
		return err
	}
	if truth(v) {
		if with {
			dot = v
		}
		return s.walk(dot, b.List)
	}
	if b.ElseList != nil {
		return s.walk(dot, b.ElseList)
	}
	return nil
}

func (s *state) rangeOver(dot reflect.Value, r *parse.RangeNode) error {
	v, err := s.pipe(dot, r.Pipe)
	if err != nil {
		return err
	}
	v = indirect(v)
	n := 0
	switch v.Kind() {
	case reflect.Slice, reflect.Array:
		for i := range v.Len() {
			if err := s.walk(v.Index(i), r.List); err != nil {
				return err
			}
		}
		n = v.Len()
	case reflect.Map:
		keys := v.MapKeys()
		sortKeys(keys)
		for _, k := range keys {
			if err := s.walk(v.MapIndex(k), r.List); err != nil {
				return err
			}
		}
		n = len(keys)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		for i := range v.Int() {
			if err := s.walk(reflect.ValueOf(int(i)), r.List); err != nil {
				return err
			}
		}
		n = int(max(v.Int(), 0))
	case reflect.Invalid:
	default:
		return fmt.Errorf("range can't iterate over %v", v)
	}
	if n == 0 && r.ElseList != nil {
		return s.walk(dot, r.ElseList)
	}
	return nil
}

// sortKeys orders a map's keys as text/template does for the kinds a
// prompt's data has: strings and integers ascending.
func sortKeys(keys []reflect.Value) {
	slices.SortFunc(keys, func(a, b reflect.Value) int {
		switch a.Kind() {
		case reflect.String:
			return cmp.Compare(a.String(), b.String())
		case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
			return cmp.Compare(a.Int(), b.Int())
		}
		return cmp.Compare(fmt.Sprint(a), fmt.Sprint(b))
	})
}

func (s *state) pipe(dot reflect.Value, p *parse.PipeNode) (reflect.Value, error) {
	var v reflect.Value
	for i, c := range p.Cmds {
		var err error
		if v, err = s.command(dot, c, v, i > 0); err != nil {
			return reflect.Value{}, err
		}
	}
	return v, nil
}

// command evaluates one command of a pipeline; final is the previous
// command's value, passed as the last argument when piped is set.
func (s *state) command(dot reflect.Value, c *parse.CommandNode, final reflect.Value, piped bool) (reflect.Value, error) {
	if id, ok := c.Args[0].(*parse.IdentifierNode); ok {
		args := make([]reflect.Value, 0, len(c.Args))
		for _, a := range c.Args[1:] {
			v, err := s.arg(dot, a)
			if err != nil {
				return reflect.Value{}, err
			}
			args = append(args, v)
		}
		if piped {
			args = append(args, final)
		}
		return call(id.Ident, args)
	}
	if piped {
		return reflect.Value{}, fmt.Errorf("%s: only a function can take a piped value", c)
	}
	return s.arg(dot, c.Args[0])
}

func (s *state) arg(dot reflect.Value, n parse.Node) (reflect.Value, error) {
	switch n := n.(type) {
	case *parse.DotNode:
		return dot, nil
	case *parse.FieldNode:
		return fields(dot, n.Ident)
	case *parse.VariableNode:
		return fields(s.root, n.Ident[1:])
	case *parse.PipeNode:
		return s.pipe(dot, n)
	case *parse.StringNode:
		return reflect.ValueOf(n.Text), nil
	case *parse.BoolNode:
		return reflect.ValueOf(n.True), nil
	case *parse.NumberNode:
		switch {
		case n.IsInt:
			return reflect.ValueOf(int(n.Int64)), nil
		case n.IsFloat:
			return reflect.ValueOf(n.Float64), nil
		}
	}
	return reflect.Value{}, unsupported(n)
}

// fields follows a chain of field names (or map keys) from v.
func fields(v reflect.Value, names []string) (reflect.Value, error) {
	for _, name := range names {
		v = indirect(v)
		switch v.Kind() {
		case reflect.Struct:
			f, ok := v.Type().FieldByName(name)
			if !ok || !f.IsExported() {
				return reflect.Value{}, fmt.Errorf("can't evaluate field %s in type %s", name, v.Type())
			}
			v = v.FieldByIndex(f.Index)
		case reflect.Map:
			if v.Type().Key().Kind() != reflect.String {
				return reflect.Value{}, fmt.Errorf("can't index a map of %s keys with field %s", v.Type().Key(), name)
			}
			v = v.MapIndex(reflect.ValueOf(name).Convert(v.Type().Key()))
		case reflect.Invalid:
			return reflect.Value{}, fmt.Errorf("nil pointer evaluating .%s", name)
		default:
			return reflect.Value{}, fmt.Errorf("can't evaluate field %s in type %s", name, v.Type())
		}
	}
	return v, nil
}

// indirect follows pointers and interfaces; a nil one gives the invalid
// Value.
func indirect(v reflect.Value) reflect.Value {
	for v.IsValid() && (v.Kind() == reflect.Pointer || v.Kind() == reflect.Interface) {
		if v.IsNil() {
			return reflect.Value{}
		}
		v = v.Elem()
	}
	return v
}

// truth is text/template's notion of a true value: not the zero of its
// kind, and for collections not empty.
func truth(v reflect.Value) bool {
	v = indirect(v)
	switch v.Kind() {
	case reflect.Invalid:
		return false
	case reflect.Array, reflect.Map, reflect.Slice, reflect.String:
		return v.Len() > 0
	case reflect.Bool:
		return v.Bool()
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return v.Int() != 0
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return v.Uint() != 0
	case reflect.Float32, reflect.Float64:
		return v.Float() != 0
	}
	return true
}

func (s *state) print(v reflect.Value) {
	if !v.IsValid() {
		s.w.WriteString("<no value>")
		return
	}
	if v.Kind() == reflect.Pointer {
		if v.IsNil() {
			s.w.WriteString("<nil>")
			return
		}
		v = v.Elem()
	}
	fmt.Fprint(s.w, v.Interface())
}

func call(name string, args []reflect.Value) (reflect.Value, error) {
	want := func(n int) error {
		if len(args) != n {
			return fmt.Errorf("wrong number of args for %s: want %d got %d", name, n, len(args))
		}
		return nil
	}
	switch name {
	case "join":
		if err := want(2); err != nil {
			return reflect.Value{}, err
		}
		list, ok := indirect(args[0]).Interface().([]string)
		sep, ok2 := indirect(args[1]).Interface().(string)
		if !ok || !ok2 {
			return reflect.Value{}, errors.New("join wants a list of strings and a separator")
		}
		return reflect.ValueOf(strings.Join(list, sep)), nil
	case "len":
		if err := want(1); err != nil {
			return reflect.Value{}, err
		}
		v := indirect(args[0])
		switch v.Kind() {
		case reflect.Array, reflect.Chan, reflect.Map, reflect.Slice, reflect.String:
			return reflect.ValueOf(v.Len()), nil
		}
		return reflect.Value{}, fmt.Errorf("len of type %s", v.Type())
	case "printf", "print":
		vals := make([]any, len(args))
		for i, a := range args {
			vals[i] = value(a)
		}
		if name == "print" {
			return reflect.ValueOf(fmt.Sprint(vals...)), nil
		}
		if len(vals) == 0 {
			return reflect.Value{}, errors.New("printf wants a format")
		}
		format, ok := vals[0].(string)
		if !ok {
			return reflect.Value{}, errors.New("printf wants a format string first")
		}
		return reflect.ValueOf(fmt.Sprintf(format, vals[1:]...)), nil
	case "eq", "ne":
		if len(args) < 2 {
			return reflect.Value{}, fmt.Errorf("%s wants at least 2 args", name)
		}
		eq := false
		a := value(args[0])
		for _, b := range args[1:] {
			if equal(a, value(b)) {
				eq = true
				break
			}
		}
		if name == "ne" {
			if len(args) != 2 {
				return reflect.Value{}, errors.New("ne wants 2 args")
			}
			eq = !eq
		}
		return reflect.ValueOf(eq), nil
	case "not":
		if err := want(1); err != nil {
			return reflect.Value{}, err
		}
		return reflect.ValueOf(!truth(args[0])), nil
	case "and", "or":
		if len(args) == 0 {
			return reflect.Value{}, fmt.Errorf("%s wants at least 1 arg", name)
		}
		for _, a := range args[:len(args)-1] {
			if truth(a) != (name == "and") {
				return a, nil
			}
		}
		return args[len(args)-1], nil
	}
	return reflect.Value{}, fmt.Errorf("function %q not defined", name)
}

// value is v's content, nil for the invalid Value.
func value(v reflect.Value) any {
	if !v.IsValid() {
		return nil
	}
	return v.Interface()
}

// equal compares basic values as eq does: integers of any size as integers.
func equal(a, b any) bool {
	ai, aok := asInt(a)
	bi, bok := asInt(b)
	if aok && bok {
		return ai == bi
	}
	va, vb := reflect.ValueOf(a), reflect.ValueOf(b)
	if va.IsValid() && vb.IsValid() && va.Type() == vb.Type() && va.Comparable() {
		return va.Equal(vb)
	}
	return false
}

func asInt(x any) (int64, bool) {
	v := reflect.ValueOf(x)
	switch v.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return v.Int(), true
	}
	return 0, false
}
