// expect: 3:60 nesting depth
// options: --size N=8
void f(int N, double A[N]) {{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{
  for (int i = 0; i < N; i++)
    A[i] = 1.0;
}}}}}}}}}}}}}}}}}}}}}}}}}}}}}}}}}}}}}}}
}
