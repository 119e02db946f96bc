// The filter button of seed 000's search screen, drawn by React Native ("Let React Native draw"): its popover shows
// while the tip should display. It renders through both hooks, which must agree; the close button invalidates.
import { tipKit } from "../modules/rork-tipkit";
import { useTipVisibility } from "../hooks/useTipVisibility";
import { useTipVisibility as useTipVisibilityStore } from "../hooks/useTipVisibilityStore";

export type FilterButtonView = {
  /** The popover's text, when the tip shows (per hook). */
  popover: string | null;
  popoverFromStore: string | null;
  close: () => Promise<void>;
};

export default function FilterButton(): FilterButtonView {
  const visible = useTipVisibility("filter.tip");
  const visibleFromStore = useTipVisibilityStore("filter.tip");
  return {
    popover: visible ? "You can narrow this down" : null,
    popoverFromStore: visibleFromStore ? "You can narrow this down" : null,
    close: () => tipKit.invalidate("filter.tip"),
  };
}
