package io.collscope.model;

import java.util.AbstractList;
import java.util.Arrays;
import java.util.RandomAccess;

/**
 * A {@code List<Long>} over a {@code long[]}: what the snapshot decoder fills instead of Avro's
 * boxed arrays, so that reading a record allocates no {@code Long} per counter and the job's
 * readers ({@link RankTotals#unboxed}, validation) copy the array instead of unboxing element by
 * element. Behaves as any mutable list of non-null longs (equality, hash code, iteration as {@link
 * java.util.List} defines them), so every other reader of a snapshot sees no difference.
 */
public final class LongList extends AbstractList<Long> implements RandomAccess {

  private long[] values;
  private int size;

  public LongList(int capacity) {
    values = new long[Math.max(0, capacity)];
  }

  /** The list of these values (the array is copied). */
  public static LongList of(long... values) {
    LongList l = new LongList(values.length);
    System.arraycopy(values, 0, l.values, 0, values.length);
    l.size = values.length;
    return l;
  }

  @Override
  public int size() {
    return size;
  }

  @Override
  public Long get(int i) {
    return getLong(i);
  }

  public long getLong(int i) {
    if (i < 0 || i >= size) throw new IndexOutOfBoundsException(i + " of " + size);
    return values[i];
  }

  @Override
  public Long set(int i, Long v) {
    long was = getLong(i);
    values[i] = v; // a null is refused as a boxed list of a non-null Avro long would refuse it
    return was;
  }

  @Override
  public void add(int i, Long v) {
    if (i < 0 || i > size) throw new IndexOutOfBoundsException(i + " of " + size);
    long value = v;
    grow();
    System.arraycopy(values, i, values, i + 1, size - i);
    values[i] = value;
    size++;
    modCount++;
  }

  /** Appends without boxing. */
  public void addLong(long v) {
    grow();
    values[size++] = v;
    modCount++;
  }

  @Override
  public Long remove(int i) {
    long was = getLong(i);
    System.arraycopy(values, i + 1, values, i, size - i - 1);
    size--;
    modCount++;
    return was;
  }

  @Override
  public void clear() {
    size = 0;
    modCount++;
  }

  /**
   * The values for reading only: the list's own array when it is exactly full (as the decoder
   * leaves it), else a copy. A caller that writes to it changes the list.
   */
  public long[] valuesForReading() {
    return values.length == size ? values : toLongArray();
  }

  /** A copy of the values. */
  public long[] toLongArray() {
    return Arrays.copyOf(values, size);
  }

  private void grow() {
    if (size == values.length) values = Arrays.copyOf(values, Math.max(8, size * 2));
  }
}
