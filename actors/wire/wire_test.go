package wire

import (
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
)

// Every message of the schema survives the wire with every field set, and
// is registered under its full name, which is how protoactor-go's remote
// finds the type of a message it receives.
func TestEveryMessageRoundTrips(t *testing.T) {
	n := 0
	for _, f := range []protoreflect.FileDescriptor{File_join_proto, File_frog_proto} {
		msgs := f.Messages()
		for i := range msgs.Len() {
			d := msgs.Get(i)
			mt, err := protoregistry.GlobalTypes.FindMessageByName(d.FullName())
			if err != nil {
				t.Fatalf("%s is not registered: %v", d.FullName(), err)
			}
			m := mt.New()
			fill(m, 1)
			b, err := proto.Marshal(m.Interface())
			if err != nil {
				t.Fatalf("%s: %v", d.FullName(), err)
			}
			back := mt.New().Interface()
			if err := proto.Unmarshal(b, back); err != nil {
				t.Fatalf("%s: %v", d.FullName(), err)
			}
			if !proto.Equal(m.Interface(), back) {
				t.Errorf("%s: %v came back as %v", d.FullName(), m.Interface(), back)
			}
			n++
		}
	}
	if n < 10 {
		t.Errorf("only %d messages seen", n)
	}
}

// fill sets every field of m to a value that is not its zero, nested
// messages included (to depth 3), and two elements of every list.
func fill(m protoreflect.Message, depth int) {
	fields := m.Descriptor().Fields()
	for i := range fields.Len() {
		fd := fields.Get(i)
		if fd.IsList() {
			if fd.Kind() == protoreflect.MessageKind && depth > 3 {
				continue
			}
			list := m.NewField(fd).List()
			for range 2 {
				if fd.Kind() == protoreflect.MessageKind {
					sub := list.NewElement().Message()
					fill(sub, depth+1)
					list.Append(protoreflect.ValueOfMessage(sub))
				} else if v, ok := scalar(fd); ok {
					list.Append(v)
				}
			}
			m.Set(fd, protoreflect.ValueOfList(list))
			continue
		}
		if fd.Kind() == protoreflect.MessageKind {
			if depth <= 3 {
				sub := m.NewField(fd).Message()
				fill(sub, depth+1)
				m.Set(fd, protoreflect.ValueOfMessage(sub))
			}
			continue
		}
		if v, ok := scalar(fd); ok {
			m.Set(fd, v)
		}
	}
}

// scalar is a value of fd's kind that is not its zero.
func scalar(fd protoreflect.FieldDescriptor) (protoreflect.Value, bool) {
	switch fd.Kind() {
	case protoreflect.BoolKind:
		return protoreflect.ValueOfBool(true), true
	case protoreflect.StringKind:
		return protoreflect.ValueOfString("s-" + string(fd.Name())), true
	case protoreflect.BytesKind:
		return protoreflect.ValueOfBytes([]byte{0, 1, 2, 255}), true
	case protoreflect.Int32Kind:
		return protoreflect.ValueOfInt32(-7), true
	case protoreflect.Int64Kind:
		return protoreflect.ValueOfInt64(-1 << 40), true
	case protoreflect.Uint32Kind:
		return protoreflect.ValueOfUint32(7), true
	case protoreflect.Uint64Kind:
		return protoreflect.ValueOfUint64(1 << 60), true
	case protoreflect.FloatKind:
		return protoreflect.ValueOfFloat32(0.25), true
	case protoreflect.DoubleKind:
		return protoreflect.ValueOfFloat64(-0.125), true
	case protoreflect.EnumKind:
		vals := fd.Enum().Values()
		return protoreflect.ValueOfEnum(vals.Get(vals.Len() - 1).Number()), true
	}
	return protoreflect.Value{}, false
}
