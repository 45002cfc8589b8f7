/** The small form parts every answer form repeats: a labelled text area and a row with one action button. */

/** A `<label>` and its `<textarea>`, the value kept by the caller. */
export function LabeledTextarea(props: {
  id: string;
  label: string;
  rows: number;
  value: string;
  onValue(value: string): void;
}) {
  return (
    <>
      <label for={props.id}>{props.label}</label>
      <textarea
        id={props.id}
        rows={props.rows}
        value={props.value}
        onInput={(e) => props.onValue(e.currentTarget.value)}
      />
    </>
  );
}

/** A row of buttons holding one action, disabled while an answer is being sent. */
export function ActionButton(props: { busy: boolean; label: string; onClick(): void }) {
  return (
    <div class="buttons">
      <button type="button" disabled={props.busy} onClick={props.onClick}>
        {props.label}
      </button>
    </div>
  );
}
