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
// messages included (to depth 3).
func fill(m protoreflect.Message, depth int) {
	fields := m.Descriptor().Fields()
	for i := range fields.Len() {
		fd := fields.Get(i)
		var v protoreflect.Value
		switch fd.Kind() {
		case protoreflect.BoolKind:
			v = protoreflect.ValueOfBool(true)
		case protoreflect.StringKind:
			v = protoreflect.ValueOfString("s-" + string(fd.Name()))
		case protoreflect.BytesKind:
			v = protoreflect.ValueOfBytes([]byte{0, 1, 2, 255})
		case protoreflect.Int32Kind:
			v = protoreflect.ValueOfInt32(-7)
		case protoreflect.Int64Kind:
			v = protoreflect.ValueOfInt64(-1 << 40)
		case protoreflect.Uint32Kind:
			v = protoreflect.ValueOfUint32(7)
		case protoreflect.Uint64Kind:
			v = protoreflect.ValueOfUint64(1 << 60)
		case protoreflect.EnumKind:
			vals := fd.Enum().Values()
			v = protoreflect.ValueOfEnum(vals.Get(vals.Len() - 1).Number())
		case protoreflect.MessageKind:
			if depth > 3 {
				continue
			}
			sub := m.NewField(fd).Message()
			fill(sub, depth+1)
			v = protoreflect.ValueOfMessage(sub)
		default:
			continue
		}
		m.Set(fd, v)
	}
}
