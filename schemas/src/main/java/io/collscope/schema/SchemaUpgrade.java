package io.collscope.schema;

import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import org.apache.avro.AvroTypeException;
import org.apache.avro.Schema;
import org.apache.avro.generic.GenericData;
import org.apache.avro.generic.GenericRecord;
import org.apache.avro.generic.IndexedRecord;

/**
 * Carries a record written with an earlier schema version over to the current one where Avro's own
 * resolution cannot: a field that became an enum (a free string before), renamed fields (matched
 * through the current field's aliases), nested records and arrays of them. Fields the old version
 * lacks take their defaults; an old string becomes the enum symbol of the same name in upper case,
 * or the enum's default when there is none, so a reader never fails on a value it merely does not
 * know.
 */
final class SchemaUpgrade {

  private SchemaUpgrade() {}

  static GenericRecord record(IndexedRecord old, Schema to) {
    GenericData.Record out = new GenericData.Record(to);
    Schema from = old.getSchema();
    for (Schema.Field f : to.getFields()) {
      Schema.Field source = sourceField(from, f);
      if (source == null) {
        if (!f.hasDefaultValue()) {
          throw new AvroTypeException(
              from.getFullName() + " has no field for " + f.name() + ", which has no default");
        }
        out.put(f.pos(), GenericData.get().getDefaultValue(f));
      } else {
        out.put(f.pos(), value(old.get(source.pos()), f.schema(), f.name()));
      }
    }
    return out;
  }

  private static Schema.Field sourceField(Schema from, Schema.Field f) {
    Schema.Field s = from.getField(f.name());
    if (s != null) return s;
    for (String alias : f.aliases()) {
      s = from.getField(alias);
      if (s != null) return s;
    }
    return null;
  }

  private static Object value(Object v, Schema to, String where) {
    if (v == null) return null;
    switch (to.getType()) {
      case RECORD:
        return record((IndexedRecord) v, to);
      case ARRAY:
        {
          List<Object> out = new ArrayList<>();
          for (Object e : (Collection<?>) v) out.add(value(e, to.getElementType(), where));
          return out;
        }
      case MAP:
        {
          Map<Object, Object> out = new java.util.LinkedHashMap<>();
          for (Map.Entry<?, ?> e : ((Map<?, ?>) v).entrySet())
            out.put(e.getKey().toString(), value(e.getValue(), to.getValueType(), where));
          return out;
        }
      case ENUM:
        {
          // Free strings of earlier versions were sometimes lower case (stage "decode").
          String symbol = v.toString().toUpperCase(java.util.Locale.ROOT);
          if (!to.hasEnumSymbol(symbol)) {
            if (to.getEnumDefault() == null) {
              throw new AvroTypeException(
                  where + ": '" + symbol + "' is not a symbol of " + to.getFullName());
            }
            symbol = to.getEnumDefault();
          }
          return new GenericData.EnumSymbol(to, symbol);
        }
      case UNION:
        for (Schema branch : to.getTypes()) {
          if (branch.getType() != Schema.Type.NULL) return value(v, branch, where);
        }
        return null;
      case STRING:
        return v.toString();
      case LONG:
        return ((Number) v).longValue();
      case DOUBLE:
        return ((Number) v).doubleValue();
      case FLOAT:
        return ((Number) v).floatValue();
      default:
        return v;
    }
  }
}
