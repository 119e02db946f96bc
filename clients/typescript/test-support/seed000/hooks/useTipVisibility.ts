// hooks/useTipVisibility.ts
import { useEffect, useState } from "react";
// Seed 000 leaves out where the hook's RorkTipKit comes from; these two lines are the wrapper's.
import { requireOptionalNativeModule } from "expo-modules-core";
const RorkTipKit = requireOptionalNativeModule("RorkTipKit");
 
export function useTipVisibility(tipId: string): boolean {
  const [visible, setVisible] = useState(false);
 
  useEffect(() => {
    if (!RorkTipKit) return;
    const sub = RorkTipKit.addListener(
      "onTipDisplayChange",
      (e: { tipId: string; shouldDisplay: boolean }) => {
        if (e.tipId === tipId) setVisible(e.shouldDisplay);
      }
    );
    return () => sub.remove();
  }, [tipId]);
 
  return visible;
}
