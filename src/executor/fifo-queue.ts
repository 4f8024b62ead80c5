/** First in, first out, with O(1) shift: the array is trimmed only once most of it has been taken. */
export class FifoQueue<T> {
  private items: T[] = [];
  private head = 0;

  get isEmpty(): boolean {
    return this.head >= this.items.length;
  }

  push(item: T): void {
    this.items.push(item);
  }

  peek(): T | undefined {
    return this.items[this.head];
  }

  shift(): T | undefined {
    if (this.isEmpty) return undefined;
    const item = this.items[this.head++];
    if (this.head > 1024 && this.head * 2 > this.items.length) {
      this.items = this.items.slice(this.head);
      this.head = 0;
    }
    return item;
  }
}
