package io.collscope.model;

import java.util.AbstractList;
import java.util.Arrays;
import java.util.RandomAccess;

/**
 * A {@code List<Integer>} over a {@code int[]}: what the snapshot decoder fills instead of Avro's
 * boxed arrays for {@code peer_index}, so that reading a record allocates no {@code Integer} per
 * listed peer and readers copy the array instead of unboxing element by element. Behaves as any
 * mutable list of non-null ints (equality, hash code, iteration as {@link java.util.List} defines
 * them), so every other reader of a snapshot sees no difference.
 */
public final class IntList extends AbstractList<Integer> implements RandomAccess {

  private int[] values;
  private int size;

  public IntList(int capacity) {
    values = new int[Math.max(0, capacity)];
  }

  /** The list of these values (the array is copied). */
  public static IntList of(int... values) {
    IntList l = new IntList(values.length);
    System.arraycopy(values, 0, l.values, 0, values.length);
    l.size = values.length;
    return l;
  }

  @Override
  public int size() {
    return size;
  }

  @Override
  public Integer get(int i) {
    return getInt(i);
  }

  public int getInt(int i) {
    if (i < 0 || i >= size) throw new IndexOutOfBoundsException(i + " of " + size);
    return values[i];
  }

  @Override
  public Integer set(int i, Integer v) {
    int was = getInt(i);
    values[i] = v; // a null is refused as a boxed list of a non-null Avro int would refuse it
    return was;
  }

  @Override
  public void add(int i, Integer v) {
    if (i < 0 || i > size) throw new IndexOutOfBoundsException(i + " of " + size);
    int value = v;
    grow();
    System.arraycopy(values, i, values, i + 1, size - i);
    values[i] = value;
    size++;
    modCount++;
  }

  /** Appends without boxing. */
  public void addInt(int v) {
    grow();
    values[size++] = v;
    modCount++;
  }

  @Override
  public Integer remove(int i) {
    int was = getInt(i);
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

  /** A copy of the values. */
  public int[] toIntArray() {
    return Arrays.copyOf(values, size);
  }

  private void grow() {
    if (size == values.length) values = Arrays.copyOf(values, Math.max(8, size * 2));
  }
}
