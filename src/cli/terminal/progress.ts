/**
 * What a following command shows while it waits: on a terminal, a spinner line under the printed events (redrawn in
 * place, cleared before each line printed); elsewhere (a pipe, a file, CI) nothing but the plain lines.
 */

const FRAMES = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'] as const;
const FRAME_MS = 80;

/** Prints lines, with a spinner line below them while something is awaited on a terminal. */
export class Progress {
  private timer: NodeJS.Timeout | undefined;
  private frame = 0;
  private text = '';
  private readonly startedMs = Date.now();

  constructor(private readonly out: NodeJS.WriteStream = process.stdout) {}

  /** Whether a spinner is drawn (stdout is a terminal). */
  get interactive(): boolean {
    return this.out.isTTY === true;
  }

  /** Starts (or retitles) the spinner. No-op when not interactive. */
  spin(text: string): void {
    this.text = text;
    if (!this.interactive) return;
    this.timer ??= setInterval(() => this.draw(), FRAME_MS);
    this.draw();
  }

  /** Prints a line above the spinner. */
  line(text: string): void {
    if (this.timer) this.clear();
    this.out.write(`${text}\n`);
    if (this.timer) this.draw();
  }

  /** A remark beside the output (a lost connection): above the spinner on a terminal, else on stderr. */
  note(text: string): void {
    if (this.interactive) this.line(text);
    else process.stderr.write(`${text}\n`);
  }

  /** Removes the spinner. */
  stop(): void {
    if (!this.timer) return;
    clearInterval(this.timer);
    this.timer = undefined;
    this.clear();
  }

  private clear(): void {
    this.out.write('\r\x1b[2K');
  }

  private draw(): void {
    const seconds = ((Date.now() - this.startedMs) / 1000).toFixed(1);
    const frame = FRAMES[this.frame++ % FRAMES.length] as string;
    const width = Math.max(20, (this.out.columns ?? 80) - 12);
    const text = this.text.length > width ? `${this.text.slice(0, width - 1)}…` : this.text;
    this.out.write(`\r\x1b[2K${frame} ${text} ${seconds}s`);
  }
}
