"""The structural SVM: estimators, the cutting-plane loop and its QP, training
callbacks, the named methods and the choice of C."""
